#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>
/* The socket interface of a multi handle (curl_multi_socket_action) is driven with epoll, which
   Glibc's Swift module does not include. */
#ifdef __linux__
#include <sys/epoll.h>
#endif

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic: Swift cannot call
   them, so each option type gets one typed wrapper. */
static inline CURLcode ccurl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_opensocket(CURL *h, curl_opensocket_callback f) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, f); }
static inline CURLcode ccurl_easy_setopt_closesocket(CURL *h, curl_closesocket_callback f) { return curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, f); }
static inline CURLcode ccurl_easy_setopt_write(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f); }
static inline CURLcode ccurl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
/* The value of a response header of the last request (curl_easy_header, libcurl >= 7.83), or
   NULL; valid until the handle is reused. */
static inline const char *ccurl_response_header(CURL *h, const char *name) {
    struct curl_header *header = NULL;
    if (curl_easy_header(h, name, 0, CURLH_HEADER, -1, &header) != CURLHE_OK || header == NULL) return NULL;
    return header->value;
}
/* CURLOPT_QUICK_EXIT (libcurl >= 7.87): a transfer that ends while its host name is still being
   looked up (its timeout passed, or the multi handle closes) leaves the lookup's thread to finish
   alone. Without it, ending such a transfer waits for getaddrinfo to return, which with a DNS
   server that does not answer is the resolver's own timeout (5 s and more) per lookup. With an
   older libcurl this does nothing and the wait stays. */
static inline CURLcode ccurl_easy_setopt_quick_exit(CURL *h) {
#if LIBCURL_VERSION_NUM >= 0x075700
    return curl_easy_setopt(h, CURLOPT_QUICK_EXIT, 1L);
#else
    (void)h;
    return CURLE_OK;
#endif
}
static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_ptr(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_socketfunction(CURLM *m, curl_socket_callback f) { return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f); }
static inline CURLMcode ccurl_multi_setopt_timerfunction(CURLM *m, curl_multi_timer_callback f) { return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f); }
/* CURL_SOCKET_TIMEOUT is a macro of a macro, which Swift does not import. */
static const curl_socket_t ccurl_socket_timeout = CURL_SOCKET_TIMEOUT;
#endif
