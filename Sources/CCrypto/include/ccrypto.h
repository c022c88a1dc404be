#ifndef CCRYPTO_H
#define CCRYPTO_H

// SHA-256 from OpenSSL's libcrypto, behind an opaque context.

#include <stddef.h>
#include <stdint.h>

typedef struct ccrypto_sha256 ccrypto_sha256;

// EVP_MD_CTX_new + EVP_DigestInit_ex with SHA-256 (fetched from the provider once). NULL on failure.
ccrypto_sha256 *ccrypto_sha256_new(void);
// EVP_DigestUpdate.
void ccrypto_sha256_update(ccrypto_sha256 *context, const void *bytes, size_t length);
// EVP_DigestFinal_ex into 32 bytes.
void ccrypto_sha256_final(ccrypto_sha256 *context, uint8_t digest[32]);
// EVP_MD_CTX_free.
void ccrypto_sha256_free(ccrypto_sha256 *context);

#endif
