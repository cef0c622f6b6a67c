#pragma once

#include <string>
#include <vector>

// Error bodies in the shape OpenAI clients parse:
//   {"error": {"message": "...", "type": "...", "param": null, "code": "..."}}
namespace dcu::gateway {

std::string OpenAiErrorBody(const std::string& message, const std::string& type,
                            const std::string& code);

// 404 for a model nobody serves; the message lists what is served.
std::string UnknownModelBody(const std::string& model, const std::vector<std::string>& served);

}  // namespace dcu::gateway
