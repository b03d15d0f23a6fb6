/* Hand-written wrappers for DPDK macros that bindgen cannot see as functions,
 * and fast-path helpers made of DPDK's inline functions. The static inline
 * functions themselves are wrapped by the file bindgen generates
 * (wrap_static_fns). */
#include <rte_errno.h>
#include <rte_rcu_qsbr.h>

int fastpath_rte_errno(void)
{
	return rte_errno;
}

/* rte_rcu_qsbr_quiescent, also telling whether the token moved since this
 * reader's last report (1) or not (0): a worker refreshes what a writer may
 * have replaced only when a grace period started. The unchanged case is the
 * inline function's own two loads. */
int fastpath_rcu_qsbr_quiescent(struct rte_rcu_qsbr *v, unsigned int thread_id)
{
	uint64_t t = __atomic_load_n(&v->token, __ATOMIC_ACQUIRE);

	if (t == __atomic_load_n(&v->qsbr_cnt[thread_id].cnt, __ATOMIC_RELAXED))
		return 0;
	rte_rcu_qsbr_quiescent(v, thread_id);
	return 1;
}
