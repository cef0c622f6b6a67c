#pragma once

// dcuctl apikey create|list|revoke: the gateways' API keys, kept by the
// controller as hashes (the key is printed once, at creation).

#include <ostream>
#include <string>
#include <vector>

#include "dcuctl/client.h"

namespace dcu::dcuctl {

// Prints the key once (with -o json|yaml: {"key": ..., "secret": ...}).
// Exit 0, 2 a refused name or scope, 1 a name already taken.
int RunApiKeyCreate(Client& client, const std::string& name, const std::vector<std::string>& models,
                    std::ostream& out, std::ostream& err);
// NAME, SCOPE, AGE; never a key or its hash.
int RunApiKeyList(Client& client, std::ostream& out, std::ostream& err);
// Exit 0, 3 no such key.
int RunApiKeyRevoke(Client& client, const std::string& name, std::ostream& out, std::ostream& err);

}  // namespace dcu::dcuctl
