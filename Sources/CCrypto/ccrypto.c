#include "ccrypto.h"

#include <openssl/evp.h>

ccrypto_sha256 *ccrypto_sha256_new(void) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (context == NULL) return NULL;
    if (EVP_DigestInit_ex(context, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(context);
        return NULL;
    }
    return (ccrypto_sha256 *)context;
}

void ccrypto_sha256_update(ccrypto_sha256 *context, const void *bytes, size_t length) {
    EVP_DigestUpdate((EVP_MD_CTX *)context, bytes, length);
}

void ccrypto_sha256_final(ccrypto_sha256 *context, uint8_t digest[32]) {
    unsigned int length = 32;
    EVP_DigestFinal_ex((EVP_MD_CTX *)context, digest, &length);
}

void ccrypto_sha256_free(ccrypto_sha256 *context) { EVP_MD_CTX_free((EVP_MD_CTX *)context); }
