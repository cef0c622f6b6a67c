#include "controller/adapters/pools_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dcu::controller {

namespace {

class Errors : public google::protobuf::io::ErrorCollector {
 public:
  Errors(std::string name, std::vector<std::string>* out) : name_(std::move(name)), out_(out) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    out_->push_back(absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}

 private:
  std::string name_;
  std::vector<std::string>* out_;
};

}  // namespace

absl::StatusOr<dcufleet::v1::PoolsConfig> LoadPoolsConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("pools config '", path, "': cannot be read"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<std::string> errors;
  Errors collector(path, &errors);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  dcufleet::v1::PoolsConfig config;
  if (!parser.ParseFromString(ss.str(), &config)) {
    return absl::InvalidArgumentError(
        errors.empty() ? absl::StrCat(path, ": not a PoolsConfig") : absl::StrJoin(errors, "; "));
  }
  return config;
}

}  // namespace dcu::controller
