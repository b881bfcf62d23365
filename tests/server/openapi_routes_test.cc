// SPDX-License-Identifier: Apache-2.0
// docs/openapi.json against the server's own route table: every route and
// method the server has is described, every described one is a route, and
// the document the server serves is the file, of this version.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "api/route.h"
#include "api/openapi.h"

namespace tickwheel::server {
namespace {

namespace json = boost::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string kPath = std::string(TICKWHEEL_SOURCE_DIR) + "/docs/openapi.json";

json::object Description() { return json::parse(ReadFile(kPath)).as_object(); }

// Every route kind but kNone: the values after it, up to the first without
// a template (a route added to Route::Kind gets one in RouteTemplate).
std::vector<Route::Kind> RouteKinds() {
  std::vector<Route::Kind> kinds;
  for (int k = static_cast<int>(Route::Kind::kNone) + 1;; ++k) {
    const auto kind = static_cast<Route::Kind>(k);
    if (RouteTemplate(kind) == "other") break;
    kinds.push_back(kind);
  }
  return kinds;
}

std::set<std::string> Methods(const char* allowed) {
  std::set<std::string> out;
  std::stringstream in(allowed);
  std::string m;
  while (std::getline(in, m, ',')) {
    m.erase(0, m.find_first_not_of(' '));
    for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.insert(m);
  }
  return out;
}

TEST(OpenApiRoutesTest, EveryRouteAndMethodOfTheServerIsDescribed) {
  const json::object description = Description();
  const json::object& paths = description.at("paths").as_object();
  const std::vector<Route::Kind> kinds = RouteKinds();
  ASSERT_GE(kinds.size(), 13u);  // at least the routes of 0.2.0 and this one
  for (Route::Kind kind : kinds) {
    const std::string path(RouteTemplate(kind));
    const json::object* item = paths.if_contains(path) ? &paths.at(path).as_object() : nullptr;
    ASSERT_NE(item, nullptr) << path << " is a route of the server but not in docs/openapi.json";
    for (const std::string& method : Methods(AllowedMethods(kind))) {
      EXPECT_TRUE(item->contains(method))
          << method << " " << path << " is served but not in docs/openapi.json";
    }
  }
}

TEST(OpenApiRoutesTest, EveryDescribedRouteAndMethodIsServed) {
  std::map<std::string, std::set<std::string>> served;
  for (Route::Kind kind : RouteKinds()) served[std::string(RouteTemplate(kind))] = Methods(AllowedMethods(kind));
  const json::object description = Description();
  for (const auto& [path, item] : description.at("paths").as_object()) {
    ASSERT_TRUE(served.count(std::string(path))) << path << " is described but not a route";
    for (const auto& [key, op] : item.as_object()) {
      if (key == "parameters" || key == "summary" || key == "description") continue;
      EXPECT_TRUE(served[std::string(path)].count(std::string(key)))
          << key << " " << path << " is described but the route does not take it";
    }
  }
}

// A concrete path of each route is matched to that route (the templates'
// {id} stands for any id).
TEST(OpenApiRoutesTest, ConcretePathsOfTheDescribedTemplatesReachTheirRoutes) {
  for (Route::Kind kind : RouteKinds()) {
    std::string path(RouteTemplate(kind));
    const std::size_t brace = path.find('{');
    if (brace != std::string::npos) path.replace(brace, path.find('}') - brace + 1, "an-id.1");
    EXPECT_EQ(MatchRoute(path).kind, kind) << path;
  }
}

TEST(OpenApiRoutesTest, TheServedDescriptionIsTheFileOfThisVersion) {
  ASSERT_EQ(OpenApiDocuments().size(), 1u);
  EXPECT_EQ(OpenApiDocuments().front().bytes, ReadFile(kPath))
      << "the build embeds docs/openapi.json: rebuild";
  EXPECT_EQ(Description().at("info").at("version").as_string(), TICKWHEEL_PROJECT_VERSION)
      << "info.version of docs/openapi.json is the project's VERSION";
  EXPECT_EQ(Description().at("openapi").as_string(), "3.1.0");
}

}  // namespace
}  // namespace tickwheel::server
