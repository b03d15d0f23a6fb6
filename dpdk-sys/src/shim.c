/* Hand-written wrappers for DPDK macros that bindgen cannot see as functions.
 * The static inline functions themselves are wrapped by the file bindgen
 * generates (wrap_static_fns); this file holds only what is a macro. */
#include <rte_errno.h>

int fastpath_rte_errno(void)
{
	return rte_errno;
}
