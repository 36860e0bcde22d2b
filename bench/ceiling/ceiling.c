/*
 * ceiling.c - loopback UDP packet-rate ceiling of this machine.
 *
 * One process, two worker threads, no pacing, no pinning:
 *   - receiver: UDP socket bound to 127.0.0.1 / ::1 on an ephemeral port,
 *     drains it with recvmmsg() in batches;
 *   - sender:   UDP socket connect()ed to the receiver, blasts fixed-size
 *     datagrams (each carrying a 64-bit sequence number) with sendmmsg() in
 *     batches, as fast as the kernel accepts them.
 * The main thread lets traffic run for a warm-up period, snapshots both
 * counters, sleeps for the measurement duration, snapshots again, and
 * reports the rates over that window.  It then stops the sender, lets the
 * receiver drain, and reports totals (dropped = sent - received, i.e.
 * datagrams the kernel discarded, normally on receive-buffer overflow).
 *
 * The received rate is the number to compare against: it is what a single
 * unpaced flow with syscall batching can push through loopback here.
 *
 * By default the receiver blocks in recvmmsg(MSG_WAITFORONE), as an ordinary
 * receiver would; -S makes it busy-poll with MSG_DONTWAIT instead (burns a
 * whole core, avoids wake-ups; an upper bound rather than a like-for-like).
 * -G sends each batch as one UDP GSO message (UDP_SEGMENT, Linux >= 4.18;
 * batch <= 64): the sender crosses the stack once per batch, and the
 * receiving socket still gets one datagram each.
 * -T makes the receiver copy only the first 64 bytes of each datagram out of
 * the kernel (MSG_TRUNC, as a receiver that reads only a header would).
 *
 * Usage: ceiling [-4|-6] [-S] [-G] [-T] [-d SECONDS] [-w WARMUP_S] [-b BATCH] [-s SIZE]
 * Output (one line on stdout, machine readable):
 *   ceiling family=4 rx=block tx=mmsg size=64 batch=64 duration_s=3.000 sent_pps=...
 *           recv_pps=... sent=N received=N dropped=N copy=whole
 * Exit status 0 on success, 1 on any error (message on stderr).
 *
 * Build: cc -O2 -Wall -Wextra -pthread -o ceiling ceiling.c
 * Only ever talks to the loopback address of the chosen family.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

#define MAX_BATCH 1024

static int g_family = 4;
static double g_duration = 3.0;
static double g_warmup = 0.5;
static int g_batch = 64;
static int g_size = 64;
static int g_spin = 0; /* -S: busy-poll receiver (MSG_DONTWAIT) instead of blocking */
static int g_gso = 0;  /* -G: each batch as one UDP GSO sendmsg (UDP_SEGMENT) */
static int g_head = 0; /* -T: the receiver copies only each datagram's head (MSG_TRUNC) */

static atomic_int g_stop_send;
static atomic_int g_stop_recv;
static atomic_ullong g_sent;
static atomic_ullong g_received;
static atomic_int g_failed;

static struct sockaddr_storage g_dst;
static socklen_t g_dstlen;

static void die(const char *what)
{
	fprintf(stderr, "ceiling: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fail_thread(const char *what)
{
	fprintf(stderr, "ceiling: %s: %s\n", what, strerror(errno));
	atomic_store(&g_failed, 1);
	atomic_store(&g_stop_send, 1);
	atomic_store(&g_stop_recv, 1);
}

static double now_s(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		die("clock_gettime");
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0) {
		if (errno != EINTR)
			die("nanosleep");
	}
}

static void *recv_main(void *arg)
{
	int fd = *(int *)arg;
	static char bufs[MAX_BATCH][2048];
	static struct mmsghdr msgs[MAX_BATCH];
	static struct iovec iovs[MAX_BATCH];

	for (int i = 0; i < g_batch; i++) {
		iovs[i].iov_base = bufs[i];
		iovs[i].iov_len = g_head ? 64 : sizeof(bufs[i]);
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iovs[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (!atomic_load_explicit(&g_stop_recv, memory_order_relaxed)) {
		int n = recvmmsg(fd, msgs, (unsigned)g_batch,
				 (g_spin ? MSG_DONTWAIT : MSG_WAITFORONE) |
				 (g_head ? MSG_TRUNC : 0), NULL);
		if (n < 0) {
			/* Nothing queued (spin) or SO_RCVTIMEO expiry (blocking):
			 * loop to re-check the stop flag. */
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			fail_thread("recvmmsg");
			break;
		}
		atomic_fetch_add_explicit(&g_received, (unsigned long long)n,
					  memory_order_relaxed);
	}
	return NULL;
}

static void *send_main(void *arg)
{
	int fd = *(int *)arg;
	static char bufs[MAX_BATCH][2048];
	static struct mmsghdr msgs[MAX_BATCH];
	static struct iovec iovs[MAX_BATCH];
	uint64_t seq = 0;

	for (int i = 0; i < g_batch; i++) {
		memset(bufs[i], 0xa5, sizeof(bufs[i]));
		iovs[i].iov_base = bufs[i];
		iovs[i].iov_len = (size_t)g_size;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iovs[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (!atomic_load_explicit(&g_stop_send, memory_order_relaxed)) {
		/* Stamp a sequence number into each datagram (if it fits). */
		if (g_size >= 8)
			for (int i = 0; i < g_batch; i++) {
				uint64_t s = seq + (uint64_t)i;
				memcpy(bufs[i], &s, sizeof(s));
			}
		int n;
		if (g_gso) {
			/* One message of g_batch iovecs, cut by the kernel into
			 * g_size-byte datagrams (UDP_SEGMENT): the stack is
			 * crossed once per batch. */
			union {
				char buf[CMSG_SPACE(sizeof(uint16_t))];
				struct cmsghdr align;
			} ctl;
			struct msghdr mh;
			memset(&mh, 0, sizeof(mh));
			memset(&ctl, 0, sizeof(ctl));
			mh.msg_iov = iovs;
			mh.msg_iovlen = (size_t)g_batch;
			mh.msg_control = ctl.buf;
			mh.msg_controllen = sizeof(ctl.buf);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			uint16_t seg = (uint16_t)g_size;
			memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
			n = sendmsg(fd, &mh, 0) < 0 ? -1 : g_batch;
		} else {
			n = sendmmsg(fd, msgs, (unsigned)g_batch, 0);
		}
		if (n < 0) {
			/* Transient local congestion: nothing was sent, retry. */
			if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)
				continue;
			/* Receiver not up yet / gone: ICMP port unreachable. */
			if (errno == ECONNREFUSED)
				continue;
			fail_thread("sendmmsg");
			break;
		}
		seq += (uint64_t)n;
		atomic_fetch_add_explicit(&g_sent, (unsigned long long)n,
					  memory_order_relaxed);
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ceiling [-4|-6] [-S] [-G] [-T] [-d SECONDS] [-w WARMUP_S] [-b BATCH] [-s SIZE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "46SGTd:w:b:s:h")) != -1) {
		switch (opt) {
		case '4': g_family = 4; break;
		case '6': g_family = 6; break;
		case 'S': g_spin = 1; break;
		case 'G': g_gso = 1; break;
		case 'T': g_head = 1; break;
		case 'd': g_duration = atof(optarg); break;
		case 'w': g_warmup = atof(optarg); break;
		case 'b': g_batch = atoi(optarg); break;
		case 's': g_size = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc || g_duration <= 0 || g_warmup < 0 ||
	    g_batch < 1 || g_batch > MAX_BATCH || g_size < 1 || g_size > 2048)
		usage();

	int af = g_family == 6 ? AF_INET6 : AF_INET;
	int rfd = socket(af, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rfd < 0)
		die("socket(recv)");
	int sfd = socket(af, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sfd < 0)
		die("socket(send)");

	/* Bind the receiver to loopback, ephemeral port (always free). */
	struct sockaddr_storage ss;
	socklen_t sslen;
	memset(&ss, 0, sizeof(ss));
	if (af == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a->sin_port = 0;
		sslen = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		a->sin6_port = 0;
		sslen = sizeof(*a);
	}
	if (bind(rfd, (struct sockaddr *)&ss, sslen) != 0)
		die("bind");
	g_dstlen = sizeof(g_dst);
	if (getsockname(rfd, (struct sockaddr *)&g_dst, &g_dstlen) != 0)
		die("getsockname");

	/* Generous receive buffer (capped by net.core.rmem_max unless root
	 * uses SO_RCVBUFFORCE; we try FORCE first and fall back). */
	int rcvbuf = 8 * 1024 * 1024;
	if (setsockopt(rfd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0 &&
	    setsockopt(rfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) != 0)
		die("setsockopt(SO_RCVBUF)");
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };
	if (setsockopt(rfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
		die("setsockopt(SO_RCVTIMEO)");

	if (connect(sfd, (struct sockaddr *)&g_dst, g_dstlen) != 0)
		die("connect");

	pthread_t rt, st;
	int err;
	if ((err = pthread_create(&rt, NULL, recv_main, &rfd)) != 0) {
		errno = err;
		die("pthread_create(recv)");
	}
	if ((err = pthread_create(&st, NULL, send_main, &sfd)) != 0) {
		errno = err;
		die("pthread_create(send)");
	}

	sleep_s(g_warmup);
	double t0 = now_s();
	unsigned long long s0 = atomic_load(&g_sent);
	unsigned long long r0 = atomic_load(&g_received);
	sleep_s(g_duration);
	double t1 = now_s();
	unsigned long long s1 = atomic_load(&g_sent);
	unsigned long long r1 = atomic_load(&g_received);

	atomic_store(&g_stop_send, 1);
	if ((err = pthread_join(st, NULL)) != 0) {
		errno = err;
		die("pthread_join(send)");
	}
	/* Let the receiver drain what is still queued, then stop it. */
	unsigned long long prev;
	do {
		prev = atomic_load(&g_received);
		sleep_s(0.2);
	} while (atomic_load(&g_received) != prev && !atomic_load(&g_failed));
	atomic_store(&g_stop_recv, 1);
	if ((err = pthread_join(rt, NULL)) != 0) {
		errno = err;
		die("pthread_join(recv)");
	}
	if (atomic_load(&g_failed))
		return 1;
	if (close(sfd) != 0)
		die("close(send)");
	if (close(rfd) != 0)
		die("close(recv)");

	double dt = t1 - t0;
	unsigned long long sent = atomic_load(&g_sent);
	unsigned long long recvd = atomic_load(&g_received);
	if (dt <= 0 || r1 == r0) {
		fprintf(stderr, "ceiling: no datagrams received in the window\n");
		return 1;
	}
	printf("ceiling family=%d rx=%s tx=%s size=%d batch=%d duration_s=%.3f "
	       "sent_pps=%.0f recv_pps=%.0f sent=%llu received=%llu dropped=%llu copy=%s\n",
	       g_family, g_spin ? "spin" : "block", g_gso ? "gso" : "mmsg",
	       g_size, g_batch, dt,
	       (double)(s1 - s0) / dt, (double)(r1 - r0) / dt, sent, recvd,
	       sent >= recvd ? sent - recvd : 0ULL, g_head ? "head" : "whole");
	if (fflush(stdout) != 0)
		die("fflush");
	return 0;
}
