#ifndef SERIALGPS_CMOSQUITTO_H
#define SERIALGPS_CMOSQUITTO_H
// libmosquitto (Debian libmosquitto1; headers from libmosquitto-dev), the MQTT client the fleet
// bridge speaks through, loaded at run time: a serialgps that never uses MQTT neither loads it
// (nor, through it, libssl and libcrypto) nor needs it installed (docs/fleet.md, "Loading").
//
// The declarations are the library's own header's, so every function pointer below has the
// type of the prototype it stands for, and the compiler checks every call. Nothing links the
// library: calling a mosquitto_* function directly, instead of through the table that
// cmosquitto_load fills, fails the link with an undefined symbol.
#if !__has_include(<mosquitto.h>)
#error "mosquitto.h not found: install libmosquitto-dev (make deps)"
#endif
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
// The MQTT thread waits in epoll(7) on its clients' sockets; Glibc's Swift module does not
// export <sys/epoll.h>.
#include <sys/epoll.h>

/// The functions the fleet bridge calls, each as `X(name)` (the library's `mosquitto_name`).
/// Adding one here is all it takes to load it.
#define CMOSQUITTO_FUNCTIONS(X)                                                              \
  X(lib_init)                                                                                \
  X(new)                                                                                     \
  X(destroy)                                                                                 \
  X(int_option)                                                                              \
  X(will_set_v5)                                                                             \
  X(username_pw_set)                                                                         \
  X(tls_set)                                                                                 \
  X(connect_bind_async)                                                                      \
  X(disconnect_v5)                                                                           \
  X(connect_v5_callback_set)                                                                 \
  X(disconnect_v5_callback_set)                                                              \
  X(message_v5_callback_set)                                                                 \
  X(publish_v5_callback_set)                                                                 \
  X(publish_v5)                                                                              \
  X(subscribe_v5)                                                                            \
  X(loop_read)                                                                               \
  X(loop_write)                                                                              \
  X(loop_misc)                                                                               \
  X(socket)                                                                                  \
  X(want_write)                                                                              \
  X(property_add_int32)                                                                      \
  X(property_add_string_pair)                                                                \
  X(property_read_int32)                                                                     \
  X(property_free_all)                                                                       \
  X(strerror)                                                                                \
  X(reason_string)

/// libmosquitto's functions, resolved by `cmosquitto_load`: `mosquitto_new` is the field
/// `mosquitto_new`, typed from its prototype in <mosquitto.h>.
struct cmosquitto_library {
#define CMOSQUITTO_FIELD(name) __typeof__(mosquitto_##name) *_Nonnull mosquitto_##name;
  CMOSQUITTO_FUNCTIONS(CMOSQUITTO_FIELD)
#undef CMOSQUITTO_FIELD
};

/// Opens `soname` (`dlopen`, kept open for the life of the process) and resolves every
/// function into `*library`. Returns false, with the reason in `error` (at most
/// `error_size` bytes, NUL-terminated) and `*library` untouched, when the library cannot be
/// opened or lacks one of them.
bool cmosquitto_load(const char *_Nonnull soname, struct cmosquitto_library *_Nonnull library,
                     char *_Nonnull error, size_t error_size);

// glibc declares pthread_setname_np only under _GNU_SOURCE.
extern int pthread_setname_np(pthread_t thread, const char *_Nonnull name);

/// Names the calling thread (at most 15 bytes), so that it shows in `ps -L` and /proc.
static inline void cmosquitto_name_current_thread(const char *_Nonnull name) {
  (void)pthread_setname_np(pthread_self(), name);
}
#endif
