/*
 * blast.c - paced UDP load for bench/router.sh: N sender threads, each with its
 * own socket (and so its own source port), sendmmsg() batches on absolute
 * deadlines, a fixed payload size, for a fixed time.
 *
 * It only sends; what arrived is counted by the caller at the receiving
 * interface (RFC 2544's tester counts frames at its receive port).
 *
 * Usage: blast -a ADDR [-p PORT] [-s PAYLOAD] [-r PPS] [-d SECONDS]
 *              [-t THREADS] [-c CPU,CPU,...] [-b BATCH]
 *   -r 0 (the default) sends unpaced: as fast as the threads can.
 *   -c pins thread i to the i-th CPU of the list (cycled).
 * Output (one line on stdout):
 *   blast threads=2 size=64 rate_pps=100000 duration_s=2.000 sent=N sent_pps=X errors=N
 * Exit status 0 on success, 1 on error, 2 on bad arguments.
 *
 * Build: cc -O2 -Wall -Wextra -pthread -o blast blast.c
 *
 * NETWORK SAFETY: it refuses any destination outside the benchmarking ranges
 * 198.18.0.0/15 (RFC 2544) and 2001:2::/48 (RFC 5180), which exist only inside
 * the namespace labs dualperf builds.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MAX_BATCH 256
#define MAX_SIZE 65000

static struct sockaddr_storage g_dst;
static socklen_t g_dstlen;
static int g_size = 64;
static double g_rate = 0; /* pps, all threads together; 0 = unpaced */
static double g_duration = 2.0;
static int g_threads = 1;
static int g_batch = 32;
static int g_cpus[MAX_THREADS];
static int g_ncpus;
static atomic_ullong g_sent;
static atomic_ullong g_errors;
static atomic_int g_failed;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	uint64_t n = now_ns();
	/* Sleep for all but the last 50 us, then spin: a sleep overshoots by tens of us. */
	if (t > n + 50000) {
		uint64_t s = t - 50000;
		struct timespec ts = {(time_t)(s / 1000000000ull), (long)(s % 1000000000ull)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	while (now_ns() < t)
		;
}

struct worker {
	int index;
	uint64_t start_ns;
};

static void *send_main(void *arg)
{
	struct worker *w = arg;
	if (g_ncpus > 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(g_cpus[w->index % g_ncpus], &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
			fprintf(stderr, "blast: cannot pin thread %d to CPU %d\n", w->index,
				g_cpus[w->index % g_ncpus]);
			atomic_store(&g_failed, 1);
			return NULL;
		}
	}
	int fd = socket(g_dst.ss_family, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&g_dst, g_dstlen) != 0) {
		fprintf(stderr, "blast: socket/connect: %s\n", strerror(errno));
		atomic_store(&g_failed, 1);
		return NULL;
	}
	int sndbuf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	static __thread char buf[MAX_SIZE];
	struct mmsghdr msgs[MAX_BATCH];
	struct iovec iovs[MAX_BATCH];
	memset(buf, 0x5a, (size_t)g_size);
	for (int i = 0; i < g_batch; i++) {
		iovs[i].iov_base = buf;
		iovs[i].iov_len = (size_t)g_size;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iovs[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	double per_thread = g_rate / g_threads;
	uint64_t end = w->start_ns + (uint64_t)(g_duration * 1e9);
	/* Each thread starts a fraction of a batch gap later, so bursts interleave. */
	double gap_ns = per_thread > 0 ? 1e9 * g_batch / per_thread : 0;
	double next = (double)w->start_ns + gap_ns * w->index / g_threads;
	unsigned long long sent = 0, errors = 0;
	for (;;) {
		if (per_thread > 0) {
			if ((uint64_t)next >= end)
				break;
			sleep_until((uint64_t)next);
			next += gap_ns;
		} else if (now_ns() >= end) {
			break;
		}
		int n = sendmmsg(fd, msgs, (unsigned)g_batch, 0);
		if (n < 0) {
			/* ENOBUFS and the like: the batch is not sent; count and go on. */
			errors++;
			continue;
		}
		sent += (unsigned)n;
	}
	atomic_fetch_add(&g_sent, sent);
	atomic_fetch_add(&g_errors, errors);
	close(fd);
	return NULL;
}

static int benchmark_range(void)
{
	if (g_dst.ss_family == AF_INET) {
		uint32_t a = ntohl(((struct sockaddr_in *)&g_dst)->sin_addr.s_addr);
		return (a & 0xfffe0000u) == 0xc6120000u; /* 198.18.0.0/15 */
	}
	const uint8_t *b = ((struct sockaddr_in6 *)&g_dst)->sin6_addr.s6_addr;
	static const uint8_t p[6] = {0x20, 0x01, 0x00, 0x02, 0x00, 0x00}; /* 2001:2::/48 */
	return memcmp(b, p, sizeof(p)) == 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: blast -a ADDR [-p PORT] [-s PAYLOAD] [-r PPS] [-d SECONDS] "
			"[-t THREADS] [-c CPU,...] [-b BATCH]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = NULL;
	int port = 9, opt;
	while ((opt = getopt(argc, argv, "a:p:s:r:d:t:c:b:h")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 's': g_size = atoi(optarg); break;
		case 'r': g_rate = atof(optarg); break;
		case 'd': g_duration = atof(optarg); break;
		case 't': g_threads = atoi(optarg); break;
		case 'b': g_batch = atoi(optarg); break;
		case 'c':
			for (char *tok = strtok(optarg, ","); tok && g_ncpus < MAX_THREADS;
			     tok = strtok(NULL, ","))
				g_cpus[g_ncpus++] = atoi(tok);
			break;
		default: usage();
		}
	}
	if (!addr || port <= 0 || port > 65535 || g_size < 1 || g_size > MAX_SIZE || g_rate < 0 ||
	    g_duration <= 0 || g_threads < 1 || g_threads > MAX_THREADS || g_batch < 1 ||
	    g_batch > MAX_BATCH)
		usage();
	memset(&g_dst, 0, sizeof(g_dst));
	struct sockaddr_in *v4 = (struct sockaddr_in *)&g_dst;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&g_dst;
	if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		g_dstlen = sizeof(*v4);
	} else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		g_dstlen = sizeof(*v6);
	} else {
		usage();
	}
	if (!benchmark_range()) {
		fprintf(stderr, "blast: %s is outside 198.18.0.0/15 and 2001:2::/48\n", addr);
		return 2;
	}
	pthread_t tids[MAX_THREADS];
	struct worker ws[MAX_THREADS];
	uint64_t start = now_ns() + 10000000; /* 10 ms to start every thread */
	for (int i = 0; i < g_threads; i++) {
		ws[i].index = i;
		ws[i].start_ns = start;
		if (pthread_create(&tids[i], NULL, send_main, &ws[i]) != 0) {
			fprintf(stderr, "blast: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < g_threads; i++)
		pthread_join(tids[i], NULL);
	double took = (double)(now_ns() - start) / 1e9;
	if (atomic_load(&g_failed))
		return 1;
	unsigned long long sent = atomic_load(&g_sent);
	printf("blast threads=%d size=%d rate_pps=%.0f duration_s=%.3f sent=%llu sent_pps=%.0f "
	       "errors=%llu\n",
	       g_threads, g_size, g_rate, took, sent, (double)sent / took,
	       (unsigned long long)atomic_load(&g_errors));
	return 0;
}
