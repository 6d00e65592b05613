#include "CMosquitto.h"

#include <dlfcn.h>
#include <stdio.h>

bool cmosquitto_load(const char *soname, struct cmosquitto_library *library, char *error,
                     size_t error_size) {
  void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *reason = dlerror();
    snprintf(error, error_size, "%s", reason != NULL ? reason : soname);
    return false;
  }
  struct cmosquitto_library loaded;
#define CMOSQUITTO_RESOLVE(name)                                                             \
  loaded.mosquitto_##name = (__typeof__(mosquitto_##name) *)dlsym(handle, "mosquitto_" #name); \
  if (loaded.mosquitto_##name == NULL) {                                                     \
    snprintf(error, error_size, "%s has no function mosquitto_" #name, soname);              \
    dlclose(handle);                                                                         \
    return false;                                                                            \
  }
  CMOSQUITTO_FUNCTIONS(CMOSQUITTO_RESOLVE)
#undef CMOSQUITTO_RESOLVE
  *library = loaded;
  return true;
}
