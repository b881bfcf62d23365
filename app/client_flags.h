// The flags every client command takes (--server, --json, --token-file,
// --ca-file) and the HTTP client they make.
#ifndef TICKWHEEL_APP_CLIENT_FLAGS_H_
#define TICKWHEEL_APP_CLIENT_FLAGS_H_

#include <chrono>
#include <memory>
#include <string>

#include "cli/blocking_http_client.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tickwheel::app {

struct ClientFlags {
  std::string server = "127.0.0.1:8080";
  bool json = false;
  std::string token_file;
  std::string ca_file;

  // Adds the flags to `cmd` (this must outlive it).
  void AddTo(CLI::App& cmd);
  // A client for --server with the token (--token-file, else
  // $TICKWHEEL_TOKEN) and --ca-file; null, saying why, if the token
  // cannot be read.
  std::unique_ptr<server::BlockingHttpClient> Client(
      std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
};

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_CLIENT_FLAGS_H_
