#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// A tiny HTTP/1.1 server on 127.0.0.1 for the downloader's tests: GET, Range: bytes=N-, and a few ways to misbehave.
class HttpServer
{
public:
    struct Route
    {
        std::string body;
        int status = 200;               // 404 and the like answer with no body
        long long dropAfter = -1;       // send this many body bytes, then close the connection (once)
        long long stallAfter = -1;      // send this many body bytes, then send nothing more
        bool ignoreRange = false;       // answer 200 with the whole body even to a Range request
        int trickleBytesPerSecond = 0;  // send the body this slowly, in 100 ms slices
    };

    struct Request
    {
        std::string path;
        long long rangeStart = -1;      // -1: no Range header
    };

    HttpServer()
    {
        m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        socklen_t length = sizeof addr;
        if (m_listen < 0 || ::bind(m_listen, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0
            || ::listen(m_listen, 16) != 0 || ::getsockname(m_listen, reinterpret_cast<sockaddr *>(&addr), &length) != 0)
            throw std::runtime_error(std::string("test server: ") + std::strerror(errno));
        m_port = ntohs(addr.sin_port);
        m_acceptor = std::thread([this] { acceptLoop(); });
    }

    ~HttpServer()
    {
        m_stopping = true;
        m_acceptor.join();
        for (auto &t : m_connections)
            t.join();
        ::close(m_listen);
    }

    HttpServer(const HttpServer &) = delete;
    HttpServer &operator=(const HttpServer &) = delete;

    int port() const { return m_port; }
    std::string url(const std::string &prefix = "/") const
    {
        return "http://127.0.0.1:" + std::to_string(m_port) + prefix;
    }

    void setRoute(const std::string &path, const Route &route)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_routes[path] = route;
    }

    std::vector<Request> requests() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_requests;
    }

    // A port on 127.0.0.1 that nothing listens on (bound, then closed).
    static int closedPort()
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof addr;
        ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &length);
        ::close(fd);
        return ntohs(addr.sin_port);
    }

private:
    void acceptLoop()
    {
        while (!m_stopping) {
            pollfd p{m_listen, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0)
                continue;
            const int fd = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd >= 0)
                m_connections.emplace_back([this, fd] { serve(fd); });
        }
    }

    bool sendAll(int fd, const char *data, std::size_t size)
    {
        while (size > 0) {
            const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
            if (n <= 0)
                return false;
            data += n;
            size -= static_cast<std::size_t>(n);
        }
        return true;
    }

    // Waits until the client hangs up or the server stops.
    void waitForClose(int fd)
    {
        char c;
        while (!m_stopping) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 50) > 0 && ::recv(fd, &c, 1, 0) <= 0)
                return;
        }
    }

    void serve(int fd)
    {
        std::string head;
        char buffer[4096];
        while (head.find("\r\n\r\n") == std::string::npos && !m_stopping) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0)
                continue;
            const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0)
                break;
            head.append(buffer, static_cast<std::size_t>(n));
        }
        Request request;
        const std::size_t space = head.find(' ');
        if (space != std::string::npos)
            request.path = head.substr(space + 1, head.find(' ', space + 1) - space - 1);
        std::string lower = head;
        for (auto &c : lower)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (const std::size_t r = lower.find("\r\nrange: bytes="); r != std::string::npos)
            request.rangeStart = std::atoll(head.c_str() + r + std::strlen("\r\nrange: bytes="));
        Route route;
        bool known = false;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_requests.push_back(request);
            if (auto it = m_routes.find(request.path); it != m_routes.end()) {
                known = true;
                route = it->second;
                it->second.dropAfter = -1;
            }
        }
        if (!known)
            route.status = 404;
        if (route.status != 200) {
            const std::string reply = "HTTP/1.1 " + std::to_string(route.status) + " Error\r\nContent-Length: 0\r\n"
                                      "Connection: close\r\n\r\n";
            sendAll(fd, reply.data(), reply.size());
        } else {
            const long long size = static_cast<long long>(route.body.size());
            const long long start = request.rangeStart >= 0 && !route.ignoreRange ? request.rangeStart : 0;
            std::string reply;
            if (start > 0)
                reply = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(start) + "-"
                        + std::to_string(size - 1) + "/" + std::to_string(size) + "\r\n";
            else
                reply = "HTTP/1.1 200 OK\r\n";
            reply += "Content-Length: " + std::to_string(size - start) + "\r\nConnection: close\r\n\r\n";
            long long end = size;
            if (route.dropAfter >= 0)
                end = std::min(end, start + route.dropAfter);
            if (route.stallAfter >= 0)
                end = std::min(end, start + route.stallAfter);
            if (route.trickleBytesPerSecond > 0) {
                sendAll(fd, reply.data(), reply.size());
                const long long slice = std::max(1, route.trickleBytesPerSecond / 10);
                for (long long at = start; at < end && !m_stopping; at += slice) {
                    if (!sendAll(fd, route.body.data() + at, static_cast<std::size_t>(std::min(slice, end - at))))
                        break;
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                }
            } else {
                reply.append(route.body, static_cast<std::size_t>(start), static_cast<std::size_t>(end - start));
                sendAll(fd, reply.data(), reply.size());
            }
            if (route.stallAfter >= 0 && end < size)
                waitForClose(fd);
        }
        ::shutdown(fd, SHUT_WR);
        waitForClose(fd);
        ::close(fd);
    }

    int m_listen = -1;
    int m_port = 0;
    std::atomic<bool> m_stopping{false};
    std::thread m_acceptor;
    std::vector<std::thread> m_connections;   // touched by the acceptor only, joined after it
    mutable std::mutex m_mutex;
    std::map<std::string, Route> m_routes;
    std::vector<Request> m_requests;
};
