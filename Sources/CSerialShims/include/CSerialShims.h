#ifndef SERIALGPS_CSERIALSHIMS_H
#define SERIALGPS_CSERIALSHIMS_H
// Thin C helpers for calls Swift cannot make directly (variadic ioctl, macros).
#endif
