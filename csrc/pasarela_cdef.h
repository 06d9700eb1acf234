/* The subset of pasarela.h that cffi parses. Constants are "..." so the compiler supplies their
 * values from pasarela.h: a drift between the two files fails the build instead of misbehaving. */
#define PASARELA_OK ...
#define PASARELA_E_INVALID_ARGUMENT ...
#define PASARELA_E_BUFFER_TOO_SMALL ...
#define PASARELA_E_TIMESTAMP ...
#define PASARELA_E_NO_HW_AES ...
#define PASARELA_E_JSON_SYNTAX ...
#define PASARELA_E_JSON_UNSUPPORTED ...
#define PASARELA_E_JSON_NOT_OBJECT ...
#define PASARELA_E_JSON_UNSAFE_INTEGER ...
#define PASARELA_E_KEY_MEMBER ...
#define PASARELA_E_BAD_HEX ...
#define PASARELA_E_BAD_LENGTH ...
#define PASARELA_E_BAD_PADDING ...
#define PASARELA_E_SIGNATURE ...
#define PASARELA_E_IV_POOL_EMPTY ...

#define PASARELA_IV_LEN ...
#define PASARELA_AES_KEY_LEN ...
#define PASARELA_PASSWORD_HEX_LEN ...
#define PASARELA_SIGNATURE_HEX_LEN ...
#define PASARELA_FORMATTED_DATE_LEN ...
#define PASARELA_ENCODED_KEY_LEN ...
#define PASARELA_JSON_SHORTEST_DIGITS ...
#define PASARELA_JSON_FACT_KEY ...
#define PASARELA_JSON_FACT_NULL ...
#define PASARELA_BODY_DATA_OFFSET ...
#define PASARELA_CPU_AES_X86 ...
#define PASARELA_CPU_AES_ARM ...
#define PASARELA_CPU_AES_ANY ...
#define PASARELA_CPU_AVX2 ...
#define PASARELA_CPU_AVX512 ...

const char *pasarela_strerror(int status);
unsigned pasarela_cpu_features(void);
const char *pasarela_version(void);
size_t pasarela_sealed_len(size_t plaintext_len);
size_t pasarela_json_out_max(size_t json_len);
size_t pasarela_json_scratch_size(size_t json_len);
size_t pasarela_workspace_scratch_size(size_t json_len);
size_t pasarela_key_cache_size(void);

void pasarela_md5(const uint8_t *in, size_t n, uint8_t out[16]);
void pasarela_sha512(const uint8_t *in, size_t n, uint8_t out[64]);
size_t pasarela_base64_encode(const uint8_t *in, size_t n, char *out);
void pasarela_hex_encode(const uint8_t *in, size_t n, char *out);
int pasarela_hex_decode(const char *in, size_t n, uint8_t *out);
int pasarela_aes256_cbc_encrypt(unsigned cpu, const uint8_t key[32], const uint8_t iv[16],
                                const uint8_t *in, size_t n, uint8_t *out, size_t out_cap, size_t *out_len);
int pasarela_aes256_cbc_decrypt(unsigned cpu, const uint8_t key[32], const uint8_t iv[16],
                                const uint8_t *in, size_t n, uint8_t *out, size_t out_cap, size_t *out_len);
int pasarela_ct_equal(const void *a, const void *b, size_t n);

int pasarela_formatted_date(uint64_t timestamp, char out[16]);
int pasarela_derive(const uint8_t *business_code, size_t business_code_len,
                    const uint8_t *terminal_serial, size_t terminal_serial_len, uint64_t timestamp,
                    char password_hex[32], char encoded_key[56], uint8_t aes_key[32]);

int pasarela_json_canonicalize(const uint8_t *in, size_t n, unsigned flags, uint8_t *out, size_t out_cap,
                               size_t *out_len, void *scratch, size_t scratch_cap, size_t *error_offset,
                               unsigned *facts);

typedef struct pasarela_credentials {
    const uint8_t *business_code;
    size_t business_code_len;
    const uint8_t *terminal_serial;
    size_t terminal_serial_len;
    unsigned cpu;
    uint64_t id;
} pasarela_credentials;

typedef struct pasarela_workspace {
    uint8_t *plaintext;
    size_t plaintext_cap;
    void *scratch;
    size_t scratch_cap;
    char *out;
    size_t out_cap;
    void *keys;
    size_t keys_cap;
    const uint8_t *iv_pool;
    size_t iv_pool_len;
    size_t iv_pool_used;
    size_t plaintext_len;
    size_t out_len;
    size_t error_offset;
    unsigned json_facts;
} pasarela_workspace;
void pasarela_workspace_wipe(pasarela_workspace *ws);

int pasarela_seal(const pasarela_credentials *credentials, pasarela_workspace *ws, uint64_t timestamp,
                  const uint8_t *plaintext, size_t plaintext_len, const uint8_t *iv);
int pasarela_seal_json(const pasarela_credentials *credentials, pasarela_workspace *ws, uint64_t timestamp,
                       const uint8_t *json, size_t json_len, unsigned json_flags, const uint8_t *iv);

int pasarela_decrypt_data(const pasarela_credentials *credentials, uint64_t timestamp, const char *data,
                          size_t data_len, uint8_t *out, size_t out_cap, size_t *out_len);
int pasarela_verify(const pasarela_credentials *credentials, pasarela_workspace *ws, uint64_t timestamp,
                    const uint8_t *canonical, size_t canonical_len, const char *signature_hex);
int pasarela_open(const pasarela_credentials *credentials, pasarela_workspace *ws, uint64_t timestamp,
                  const char *data, size_t data_len, const char *signature_hex);
size_t pasarela_seal_json_batch(const pasarela_credentials *const *credentials, uint64_t timestamp,
                                const uint8_t *json, const size_t *json_lens, size_t n, unsigned json_flags,
                                const uint8_t *ivs, pasarela_workspace *ws, int *statuses, size_t *plaintext_lens,
                                size_t *out_lens, unsigned *facts);
