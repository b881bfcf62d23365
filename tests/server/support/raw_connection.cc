// SPDX-License-Identifier: Apache-2.0
#include "support/raw_connection.h"

#include <poll.h>

namespace tickwheel::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

RawConnection::RawConnection(int port, const std::string& from) : socket_(ioc_) {
  socket_.open(tcp::v4());
  socket_.bind(tcp::endpoint(asio::ip::make_address(from), 0));
  socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                static_cast<unsigned short>(port)));
}

bool RawConnection::Send(std::string_view bytes) {
  boost::system::error_code ec;
  asio::write(socket_, asio::buffer(bytes), ec);
  return !ec;
}

namespace {

// Waits until `socket` is readable; false after `timeout`.
bool Readable(tcp::socket& socket, std::chrono::milliseconds timeout) {
  pollfd p{socket.native_handle(), POLLIN, 0};
  return poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}

}  // namespace

std::string RawConnection::ReadResponse(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  boost::system::error_code ec;
  auto read_more = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !Readable(socket_, left)) return false;
    char chunk[4096];
    const std::size_t n = socket_.read_some(asio::buffer(chunk), ec);
    if (ec) return false;
    buffer_.append(chunk, n);
    return true;
  };
  std::size_t end;
  for (;;) {
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!read_more()) return "";
    }
    // An interim 100 Continue: skip it.
    if (buffer_.compare(0, 12, "HTTP/1.1 100") == 0) {
      buffer_.erase(0, end + 4);
      continue;
    }
    break;
  }
  std::size_t length = 0;
  const std::size_t cl = buffer_.find("Content-Length: ");
  if (cl != std::string::npos && cl < end) length = std::stoul(buffer_.substr(cl + 16));
  while (buffer_.size() < end + 4 + length) {
    if (!read_more()) return "";
  }
  std::string response = buffer_.substr(0, end + 4 + length);
  buffer_.erase(0, end + 4 + length);
  return response;
}

bool RawConnection::ClosedWithin(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !Readable(socket_, left)) return false;
    char chunk[4096];
    boost::system::error_code ec;
    const std::size_t n = socket_.read_some(asio::buffer(chunk), ec);
    if (ec) return true;
    buffer_.append(chunk, n);
  }
}

int RawConnection::StatusOf(const std::string& response) {
  return response.size() > 12 ? std::stoi(response.substr(9, 3)) : 0;
}

std::string RawRequest(const std::string& method, const std::string& target,
                       const std::string& body, const std::string& headers) {
  std::string out = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers;
  if (!body.empty()) out += "Content-Type: application/json\r\n";
  return out + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace tickwheel::testing
