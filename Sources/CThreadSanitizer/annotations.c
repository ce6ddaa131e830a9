// Declarations only (include/CThreadSanitizer.h): the functions are ThreadSanitizer's runtime's.
#include "CThreadSanitizer.h"
