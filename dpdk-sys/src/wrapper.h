/* Headers fastpath binds. Keep this list to what the project uses: every header
 * added here grows the generated bindings and the shim. */
#include <rte_config.h>
#include <rte_version.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_cycles.h>
#include <rte_per_lcore.h>
#include <rte_memory.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_ether.h>
#include <rte_ethdev.h>
#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_ring.h>
#include <rte_rib.h>
#include <rte_lpm6.h>
#include <rte_fib.h>
#include <rte_rcu_qsbr.h>
#include <rte_acl.h>
#include <rte_seqlock.h>
#include <rte_prefetch.h>
#include <rte_telemetry.h>
#include <rte_pdump.h>

/* Hand-written helpers for what is a macro, not a function, in DPDK. */
int fastpath_rte_errno(void);
/* A fast-path helper: rte_rcu_qsbr_quiescent, returning whether the token
 * moved since the reader's last report. */
int fastpath_rcu_qsbr_quiescent(struct rte_rcu_qsbr *v, unsigned int thread_id);
