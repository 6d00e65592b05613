#ifndef SERIALGPS_CUDEV_SHIM_H
#define SERIALGPS_CUDEV_SHIM_H
#include <libudev.h>
#endif
