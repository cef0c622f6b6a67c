#pragma once

#include <string>
#include <vector>

namespace dcu::migrations {

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

// All migrations/NNNN_name.sql files compiled into the binary, in order.
const std::vector<Migration>& EmbeddedMigrations();

}  // namespace dcu::migrations
