// libcurl's multi interface as a closed-loop HTTP driver: N easy handles on one thread, each re-issued as soon as
// its response completes, keep-alive connections reused. For comparing HTTP clients against `iapcheck bench
// driver`'s endpoint (see Benchmarks/http-clients/README.md).
//
//   cc -O2 -o /tmp/curl_multi Benchmarks/http-clients/curl_multi.c -lcurl
//   /tmp/curl_multi http://127.0.0.1:18089/ 4 3      # URL, connections, seconds
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t discard(char *p, size_t s, size_t n, void *u) { (void)p; (void)u; return s * n; }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s URL CONNECTIONS SECONDS\n", argv[0]); return 2; }
    const char *url = argv[1];
    int n = atoi(argv[2]);
    double seconds = atof(argv[3]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)n);
    CURL **easy = calloc(n, sizeof(CURL *));
    for (int i = 0; i < n; i++) {
        easy[i] = curl_easy_init();
        curl_easy_setopt(easy[i], CURLOPT_URL, url);
        curl_easy_setopt(easy[i], CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(easy[i], CURLOPT_TCP_NODELAY, 1L);
        curl_multi_add_handle(multi, easy[i]);
    }
    long done = 0, errors = 0;
    double start = now(), end = start + seconds;
    int running = n;
    while (now() < end) {
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left))) {
            if (m->msg != CURLMSG_DONE) continue;
            if (m->data.result != CURLE_OK) errors++; else done++;
            curl_multi_remove_handle(multi, m->easy_handle);
            curl_multi_add_handle(multi, m->easy_handle);  // the next request on the same (kept-alive) connection
        }
        curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    double elapsed = now() - start;
    printf("libcurl multi: %.0f requests/s (%d connections, %ld requests, %ld errors)\n", done / elapsed, n, done, errors);
    for (int i = 0; i < n; i++) { curl_multi_remove_handle(multi, easy[i]); curl_easy_cleanup(easy[i]); }
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return 0;
}
