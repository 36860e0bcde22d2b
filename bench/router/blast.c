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
 *              [-R IFNAME -M NEXTHOP_MAC -S SRCADDR]
 *   -r 0 (the default) sends unpaced: as fast as the threads can.
 *   -c pins thread i to the i-th CPU of the list (cycled).
 *   -R sends whole Ethernet frames on IFNAME through AF_PACKET (PACKET_QDISC_BYPASS)
 *      instead of UDP sockets: the same UDP datagrams (SRCADDR -> ADDR, headers and
 *      checksums built here) to NEXTHOP_MAC, without the sender's IP and UDP stack, so
 *      one sender core offers several times more frames.
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
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/ioctl.h>
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
static const char *g_ifname; /* -R: raw frames on this interface */
static unsigned char g_nexthop[6];
static struct sockaddr_storage g_src;
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

static uint32_t sum16(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* One Ethernet frame carrying a UDP datagram of g_size bytes from g_src to g_dst,
 * source port `sport`; returns its length. */
static size_t build_frame(uint8_t *f, const uint8_t *src_mac, uint16_t sport)
{
	int v4 = g_dst.ss_family == AF_INET;
	size_t ip_len = v4 ? 20 : 40, udp_len = 8 + (size_t)g_size;
	memcpy(f, g_nexthop, 6);
	memcpy(f + 6, src_mac, 6);
	f[12] = v4 ? 0x08 : 0x86;
	f[13] = v4 ? 0x00 : 0xdd;
	uint8_t *ip = f + 14, *udp = ip + ip_len;
	memset(ip, 0, ip_len + udp_len);
	uint16_t dport = ntohs(v4 ? ((struct sockaddr_in *)&g_dst)->sin_port
				  : ((struct sockaddr_in6 *)&g_dst)->sin6_port);
	udp[0] = (uint8_t)(sport >> 8), udp[1] = (uint8_t)sport;
	udp[2] = (uint8_t)(dport >> 8), udp[3] = (uint8_t)dport;
	udp[4] = (uint8_t)(udp_len >> 8), udp[5] = (uint8_t)udp_len;
	memset(udp + 8, 0x5a, (size_t)g_size);
	uint32_t pseudo;
	if (v4) {
		size_t tot = ip_len + udp_len;
		ip[0] = 0x45, ip[2] = (uint8_t)(tot >> 8), ip[3] = (uint8_t)tot;
		ip[6] = 0x40, ip[8] = 64, ip[9] = 17; /* DF, TTL 64, UDP */
		memcpy(ip + 12, &((struct sockaddr_in *)&g_src)->sin_addr, 4);
		memcpy(ip + 16, &((struct sockaddr_in *)&g_dst)->sin_addr, 4);
		uint16_t c = fold(sum16(ip, 20, 0));
		ip[10] = (uint8_t)(c >> 8), ip[11] = (uint8_t)c;
		pseudo = sum16(ip + 12, 8, 17 + (uint32_t)udp_len);
	} else {
		ip[0] = 0x60, ip[4] = (uint8_t)(udp_len >> 8), ip[5] = (uint8_t)udp_len;
		ip[6] = 17, ip[7] = 64;
		memcpy(ip + 8, &((struct sockaddr_in6 *)&g_src)->sin6_addr, 16);
		memcpy(ip + 24, &((struct sockaddr_in6 *)&g_dst)->sin6_addr, 16);
		pseudo = sum16(ip + 8, 32, 17 + (uint32_t)udp_len);
	}
	uint16_t c = fold(sum16(udp, udp_len, pseudo));
	if (c == 0)
		c = 0xffff;
	udp[6] = (uint8_t)(c >> 8), udp[7] = (uint8_t)c;
	return 14 + ip_len + udp_len;
}

/* An AF_PACKET socket on g_ifname that bypasses the qdisc; fills in its MAC. */
static int raw_socket(uint8_t *mac)
{
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", g_ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0)
		return -1;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	struct sockaddr_ll sll;
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = (int)if_nametoindex(g_ifname);
	sll.sll_protocol = 0; /* send only */
	if (sll.sll_ifindex == 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	return fd;
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
	static __thread uint8_t buf[MAX_SIZE + 80];
	size_t len = (size_t)g_size;
	int fd;
	if (g_ifname) {
		uint8_t mac[6];
		fd = raw_socket(mac);
		if (fd >= 0)
			len = build_frame(buf, mac, (uint16_t)(40000 + w->index));
	} else {
		fd = socket(g_dst.ss_family, SOCK_DGRAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&g_dst, g_dstlen) != 0)
			fd = -1;
		memset(buf, 0x5a, len);
	}
	if (fd < 0) {
		fprintf(stderr, "blast: socket: %s\n", strerror(errno));
		atomic_store(&g_failed, 1);
		return NULL;
	}
	int sndbuf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	struct mmsghdr msgs[MAX_BATCH];
	struct iovec iovs[MAX_BATCH];
	for (int i = 0; i < g_batch; i++) {
		iovs[i].iov_base = buf;
		iovs[i].iov_len = len;
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
			"[-t THREADS] [-c CPU,...] [-b BATCH] [-R IFNAME -M NEXTHOP_MAC -S SRCADDR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = NULL;
	int port = 9, opt;
	const char *src = NULL, *nexthop = NULL;
	while ((opt = getopt(argc, argv, "a:p:s:r:d:t:c:b:R:M:S:h")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 's': g_size = atoi(optarg); break;
		case 'r': g_rate = atof(optarg); break;
		case 'd': g_duration = atof(optarg); break;
		case 't': g_threads = atoi(optarg); break;
		case 'b': g_batch = atoi(optarg); break;
		case 'R': g_ifname = optarg; break;
		case 'M': nexthop = optarg; break;
		case 'S': src = optarg; break;
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
	if (g_ifname) {
		unsigned m[6];
		if (!nexthop || !src ||
		    sscanf(nexthop, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
			usage();
		for (int i = 0; i < 6; i++)
			g_nexthop[i] = (unsigned char)m[i];
		g_src.ss_family = g_dst.ss_family;
		void *a = g_dst.ss_family == AF_INET
				  ? (void *)&((struct sockaddr_in *)&g_src)->sin_addr
				  : (void *)&((struct sockaddr_in6 *)&g_src)->sin6_addr;
		if (inet_pton(g_dst.ss_family, src, a) != 1)
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
