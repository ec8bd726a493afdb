#include "core/util/sha256.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

#ifdef TRAINLAB_WITH_OPENSSL
#include <openssl/evp.h>
#endif

namespace trainlab {

#ifdef TRAINLAB_WITH_OPENSSL

struct Sha256::Context
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256()
    : m_context(std::make_unique<Context>())
{
    if (!m_context->md || EVP_DigestInit_ex(m_context->md, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256: libcrypto could not start a digest");
}

Sha256::~Sha256() = default;

void Sha256::update(const void *data, std::size_t size)
{
    if (EVP_DigestUpdate(m_context->md, data, size) != 1)
        throw std::runtime_error("SHA-256: libcrypto failed to hash");
}

std::string Sha256::hexDigest()
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(m_context->md, digest, &length) != 1)
        throw std::runtime_error("SHA-256: libcrypto failed to finish the digest");
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 0xf];
    }
    return out;
}

#else

struct Sha256::Context
{};

Sha256::Sha256()
{
    throw std::runtime_error("SHA-256 needs OpenSSL's libcrypto, which this build lacks: install libssl-dev and rebuild");
}

Sha256::~Sha256() = default;

void Sha256::update(const void *, std::size_t) {}

std::string Sha256::hexDigest()
{
    return {};
}

#endif

std::string sha256File(const std::string &path)
{
    Sha256 hash;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    char buffer[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            throw std::runtime_error(path + ": read error: " + std::strerror(err));
        }
        if (n == 0)
            break;
        hash.update(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return hash.hexDigest();
}

} // namespace trainlab
