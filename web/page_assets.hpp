// The web view's page, embedded at build time (web/embed_assets.cmake): index.html, app.js,
// app.css and uPlot's script and style sheet from npm. No file is read at run time.
#pragma once

#include <vector>

#include "web/web_server.hpp"

namespace vigil::web {

std::vector<Asset> page_assets();

}  // namespace vigil::web
