#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace trainlab {

// Incremental SHA-256 through OpenSSL's libcrypto; hexDigest() ends the message, so call it once.
// In a build without libcrypto every call throws std::runtime_error saying so.
class Sha256
{
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256 &) = delete;
    Sha256 &operator=(const Sha256 &) = delete;
    void update(const void *data, std::size_t size);
    std::string hexDigest();

private:
    struct Context;
    std::unique_ptr<Context> m_context;
};

// Lower-case hex SHA-256 of a file's bytes; throws std::runtime_error naming the file when it cannot be read.
std::string sha256File(const std::string &path);

} // namespace trainlab
