// SPDX-License-Identifier: Apache-2.0
// The web console's files (server/ui/assets/), compiled into the binary by
// cmake/EmbedFiles.cmake at build time: `tickwheel serve --ui` serves them
// without reading the disk or running a build step.
#ifndef TICKWHEEL_SERVER_UI_UI_ASSETS_H_
#define TICKWHEEL_SERVER_UI_UI_ASSETS_H_

#include <string_view>
#include <vector>

namespace tickwheel::server {

struct UiAsset {
  std::string_view path;   // relative to server/ui/assets/, e.g. "views/timer.js"
  std::string_view bytes;  // the file's content
  std::string_view etag;   // a quoted strong ETag: "\"<16 hex digits of its SHA-256>\""
};

// Every asset, by path. Static storage: valid for the process's life.
const std::vector<UiAsset>& UiAssets();

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_UI_UI_ASSETS_H_
