#include "ccrypto.h"

#include <openssl/evp.h>
#include <pthread.h>

// SHA-256's implementation, fetched from the default provider once for the process. `EVP_sha256()` names the
// algorithm only: OpenSSL 3 fetches it again at every EVP_DigestInit_ex, a lookup in the provider store under its
// read lock, which the fetch loop's TLS work takes too. NULL when the fetch failed (then `EVP_sha256()` is used).
static EVP_MD *fetched_sha256;
static pthread_once_t fetched_sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void) { fetched_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL); }

ccrypto_sha256 *ccrypto_sha256_new(void) {
    pthread_once(&fetched_sha256_once, fetch_sha256);
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (context == NULL) return NULL;
    const EVP_MD *digest = fetched_sha256 != NULL ? fetched_sha256 : EVP_sha256();
    if (EVP_DigestInit_ex(context, digest, NULL) != 1) {
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
