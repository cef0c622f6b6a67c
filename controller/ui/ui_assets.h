#pragma once

// The dashboard's files (controller/ui/static/), embedded at build time by
// embed.cmake; served under /ui/ by controller/service/http_api.

#include <string>
#include <vector>

namespace dcu::controller {

struct UiAsset {
  const char* path;          // relative to /ui/: "index.html", "app.js"
  const char* content_type;  // from the extension
  std::string data;
};

const std::vector<UiAsset>& UiAssets();

}  // namespace dcu::controller
