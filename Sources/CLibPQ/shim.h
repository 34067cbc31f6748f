#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>

/* Char-literal macros from postgres_ext.h that Swift cannot import. */
static const int CLIBPQ_DIAG_SQLSTATE = 'C';
static const int CLIBPQ_DIAG_MESSAGE_PRIMARY = 'M';
static const int CLIBPQ_DIAG_MESSAGE_DETAIL = 'D';
static const int CLIBPQ_DIAG_MESSAGE_HINT = 'H';
#endif
