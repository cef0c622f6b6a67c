#include "gateway/openai_errors.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace dcu::gateway {

std::string OpenAiErrorBody(const std::string& message, const std::string& type,
                            const std::string& code) {
  nlohmann::json j = {
      {"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
  // replace: a model name a client sent may be any bytes.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string UnknownModelBody(const std::string& model, const std::vector<std::string>& served) {
  std::string list = served.empty() ? "none" : absl::StrJoin(served, ", ");
  return OpenAiErrorBody(
      absl::StrCat("The model '", model, "' does not exist; served models: ", list),
      "invalid_request_error", "model_not_found");
}

}  // namespace dcu::gateway
