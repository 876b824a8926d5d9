# What the query phases of the postings kernel share (see _postings_search):
# the call's constants (Task) and the running state of one query (Query).

from libc.stdint cimport uint64_t, int64_t

from overlap._kernels cimport _limits
from overlap._kernels._bounds cimport prune_cut
from overlap._kernels._runner cimport Scratch, current_threshold
from overlap._kernels._signatures cimport sig_scan_fn
from overlap._kernels._types cimport Coll, Index, SIGW


ctypedef struct Task:
    # what one kernel call does; the same for every query of the call
    const Coll* Q
    const Coll* R
    const Index* X
    int mode             # MODE_TOPK or MODE_JOIN
    int measure          # the score (_bounds.Measure)
    int k                # matches kept per query (top-k)
    double floor_score   # min_score (top-k) or threshold (join)
    bint skip_self       # top-k: reference qi is not a match of query qi (all-vs-rest)
    bint upper_only      # join: the self-join, each pair once (see key_above)
    sig_scan_fn sig_scan # the group signature test of the CPU level the call uses
    int64_t max_row      # the scratch's shape: longest query row (a field) and mass
    int64_t max_mass


ctypedef struct Query:
    # the running state of the query being searched
    int64_t qi
    int64_t sizes[_limits.MAX_FIELDS]              # the query's size in every field
    uint64_t sigs[_limits.MAX_FIELDS * SIGW]       # and its token signature in every field
    int driver                             # the field whose postings are scanned
    int64_t size                           # the query's size in the driver field
    int64_t n_tokens     # driver tokens some reference holds (s.post_* slots)
    int64_t rest         # query mass of the driver tokens not visited yet
    int64_t skipped      # mass of visited tokens whose postings were skipped whole
    int64_t partial      # mass of visited tokens whose postings were read in part
    int64_t n_touched    # references in s.touched
    int64_t best_count   # the largest partial count seen, and its reference
    int64_t best_ref
    int64_t costs[_limits.MAX_FIELDS]      # entries each field's scan would read
    int n_filters        # other fields whose scan filtered the candidates
    uint64_t sig64       # its 64-bit row signature (row_sig64)
    int loaded           # fields whose tokens load_tokens has looked up (bit f)
    int64_t nt_f[_limits.MAX_FIELDS]       # and their n_tokens and rest as loaded
    int64_t rest_f[_limits.MAX_FIELDS]


cdef inline double running_cut(Scratch* s, const Task* T) noexcept nogil:
    """The running threshold as a pruning cut (prune_cut: ties are never pruned)."""
    return prune_cut(current_threshold(s, T.k, T.floor_score))
