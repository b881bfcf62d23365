#include "client_flags.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace tickwheel::app {

void ClientFlags::AddTo(CLI::App& cmd) {
  cmd.add_option("--server", server,
                 "the server: host:port, or https://host:port for a server with --tls-cert")
      ->capture_default_str();
  cmd.add_flag("--json", json, "print the server's JSON answer as is");
  cmd.add_option("--token-file", token_file,
                 "a file holding the API token (default: $TICKWHEEL_TOKEN)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--ca-file", ca_file, "PEM CA certificates trusted for an https:// --server");
}

std::unique_ptr<server::BlockingHttpClient> ClientFlags::Client(
    std::chrono::milliseconds timeout) const {
  server::BlockingHttpClientOptions options;
  options.timeout = timeout;
  options.ca_file = ca_file;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::getline(in, options.bearer_token);
    while (!options.bearer_token.empty() &&
           std::isspace(static_cast<unsigned char>(options.bearer_token.back()))) {
      options.bearer_token.pop_back();
    }
    if (!in && options.bearer_token.empty()) {
      std::fprintf(stderr, "tickwheel: --token-file %s: cannot read a token from it\n",
                   token_file.c_str());
      return nullptr;
    }
  } else if (const char* env = std::getenv("TICKWHEEL_TOKEN")) {
    options.bearer_token = env;
  }
  return std::make_unique<server::BlockingHttpClient>(server, std::move(options));
}

}  // namespace tickwheel::app
