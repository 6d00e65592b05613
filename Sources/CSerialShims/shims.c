#include "CSerialShims.h"
