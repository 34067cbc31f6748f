#ifndef CLIBZ_SHIM_H
#define CLIBZ_SHIM_H
#include <zlib.h>

/* deflateInit2 is a macro (it passes the library's version and the stream's size): Swift sees
   only deflateInit2_, so the workbook calls it through this. */
static inline int clibz_deflate_init_raw(z_streamp stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
}
#endif
