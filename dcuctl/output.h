#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "google/protobuf/message.h"
#include <nlohmann/json.hpp>

namespace dcu::dcuctl {

// A plain-text table with a header row, columns padded to fit, like kubectl.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Protobuf message -> JSON with the proto field names and enum names.
nlohmann::json ProtoToJson(const google::protobuf::Message& message);

// Block-style YAML of a JSON value (strings quoted when needed).
std::string ToYaml(const nlohmann::json& value);

// Prints `value` as "json" (indented) or "yaml".
void PrintStructured(const nlohmann::json& value, const std::string& format, std::ostream& out);

// "5s ago", "3m12s ago" from a unix-ms timestamp ("-" when 0).
std::string Ago(int64_t unix_ms);

}  // namespace dcu::dcuctl
