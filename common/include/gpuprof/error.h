/* error.h - gpuprof error codes that are not errno values.
 *
 * Functions return 0 or a negative value: -errno, or one of the negative
 * GPD_E* codes below (all below -4096, so they never clash with errno).
 * gpd_strerror() names both kinds.
 */
#ifndef GPUPROF_ERROR_H
#define GPUPROF_ERROR_H

#define GPD_ERRNO_MAP(X)                                                     \
  X(BADREGION, "shared-memory region header is invalid")                     \
  X(BADRING, "ring indices are out of range (corrupt ring)")                 \
  X(BADRECORD, "malformed ring record")                                      \
  X(BADVERSION, "record or protocol version not supported")                  \
  X(FRAMETOOBIG, "frame length exceeds the maximum")                         \
  X(BADFRAME, "frame payload does not decode")                               \
  X(PROTO, "unexpected message in this protocol state")                      \
  X(DENIED, "permission denied by peer-credential policy")                   \
  X(NODAEMON, "no gpuprofd is listening on the socket")                      \
  X(NOVENDOR, "vendor library not available")                                \
  X(VENDOR, "vendor library call failed")                                    \
  X(CONFIG, "configuration error")                                           \
  X(STORE, "profile store (SQLite) error")

typedef enum gpd_errno_e {
  GPD_E__BASE = -4200,
#define GPD_ERR_ENUM(name, msg) GPD_E##name,
  GPD_ERRNO_MAP(GPD_ERR_ENUM)
#undef GPD_ERR_ENUM
  GPD_E__END
} gpd_errno_t;

/** Text for 0, -errno or a GPD_E* code.  Thread-safe (static strings or
 *  strerrordesc_np). */
const char *gpd_strerror(int err);

#endif
