/* LockFreeStack: Treiber's stack with a (pointer, generation) head changed by a double-width
 * compare-and-swap, and nodes recycled at once (LockFreeStack.swift; the node pool,
 * CShims/ilk_node_pool.c, hands a popped node to the next push without a grace period).
 *
 * @mirrors Sources/Interlock/LockFree/LockFreeStack.swift: push pop
 * @sha256 292daa88cc4f5ef9
 * @config -DINIT=3 -DOPS0=1 -DMASK0=0 -DOPS1=3 -DMASK1=4
 * @config -DINIT=2 -DOPS0=2 -DMASK0=1 -DOPS1=3 -DMASK1=2
 * @config -DINIT=1 -DOPS0=2 -DMASK0=1 -DOPS1=2 -DMASK1=1
 * @config -DINIT=2 -DOPS0=3 -DMASK0=2 -DOPS1=3 -DMASK1=5
 * @config -DN=3 -DINIT=2 -DOPS0=1 -DMASK0=0 -DOPS1=2 -DMASK1=2 -DOPS2=2 -DMASK2=1
 * @config -DN=3 -DINIT=3 -DOPS0=2 -DMASK0=0 -DOPS1=2 -DMASK1=2 -DOPS2=2 -DMASK2=1
 * @mutant -DINIT=3 -DOPS0=1 -DMASK0=0 -DOPS1=3 -DMASK1=4 -DMUTANT_NO_GENERATION
 * @mutant -DINIT=1 -DOPS0=1 -DMASK0=1 -DOPS1=1 -DMASK1=1 -DMUTANT_STALE_NEXT
 *
 * N threads (2 or 3) each run a script of OPSi operations: operation k of thread i is a push of
 * a value of its own (values are unique) when bit k of MASKi is set, else a pop. The stack
 * starts with INIT nodes. The first configuration is the classic ABA schedule: thread 0 pops
 * while thread 1 pops twice and pushes, which can recycle thread 0's top node onto the top
 * again; the others mix pushes and pops on both sides, and three threads (the largest: 13.7
 * million states, 11-21 s on the 2-core machine). Every interleaving of the scripts is explored,
 * with every choice of recycled node (the scripts are fixed so that the search stays within
 * seconds; with free choice of push or pop, 2 threads of 3 operations ran past 5 minutes).
 *
 * The pool is modelled as a set of free nodes from which a push takes ANY node, in one step:
 * every recycling order a real pool can produce (this thread's cache, another thread's batch
 * through the ready list, a node popped a moment ago) is among the choices. A pop's node is
 * free again at once, the step after its compare-and-swap: no grace period. What the grace
 * period still guarantees (the node's memory stays readable while a pop may hold it, I4) is
 * given here: nodes are never unmapped, so a stale read of `next` returns some value.
 *
 * Each atomic step of the code is one step here:
 *   push  take a node; store the element; load the generation, load the pointer (two steps,
 *         relaxed guesses); loop: store next = the pointer in hand; DWCAS(head: (pointer,
 *         generation) -> (node, generation)), which on failure hands back the pair found.
 *   pop   peek the pointer: nil returns nil; load the generation, load the pointer (two steps);
 *         loop: nil returns nil; load the top node's next (maybe stale: the node may have been
 *         popped and recycled meanwhile); DWCAS(head: (top, generation) -> (next, generation+1));
 *         on success: read the element, free the node.
 *
 * Checked (assertions):
 *   - a pop returns only a value that was pushed and not popped before (no duplicate: each
 *     value is popped at most once), and never reads a free node's element;
 *   - at the end, the list from head is acyclic, holds only nodes in use, and the values in it
 *     plus the values popped are exactly the values pushed, each once (nothing lost);
 *   - a linked node is not free (checked at every successful pop).
 *
 * Mutants (each must fail): MUTANT_NO_GENERATION (pop leaves the generation as it is: the
 * classic ABA, a pop whose top was popped and pushed again installs a stale next, reviving a
 * popped node), MUTANT_STALE_NEXT (push does not store next again after a failed CAS: the node
 * links to a head that has moved, losing or reviving nodes).
 *
 * Not modelled, and why that is sound: the memory orders (every step is sequentially
 * consistent; the file comment of LockFreeStack.swift argues acquire/release, and ilk_dwcas is
 * sequentially consistent anyway); the backoff (timing); the read-side section (it only keeps
 * node memory readable, which the model assumes outright); generation overflow (a 64-bit count).
 */

#ifndef N
#define N 2
#endif
#ifndef INIT
#define INIT 0
#endif
#ifndef OPS0
#define OPS0 0
#endif
#ifndef OPS1
#define OPS1 0
#endif
#ifndef OPS2
#define OPS2 0
#endif
#ifndef MASK0
#define MASK0 0
#endif
#ifndef MASK1
#define MASK1 0
#endif
#ifndef MASK2
#define MASK2 0
#endif
#define NODES (INIT + OPS0 + OPS1 + OPS2) /* enough for every push */
#define NIL 255
#define VALUES 16 /* pushed values 1 ... 9 (thread * 3 + push + 1), INIT's 10 ... 15 */

byte head = NIL;
byte generation = 0;
byte next[NODES];
byte val[NODES];
bool inUse[NODES];        /* taken from the pool and not yet freed */
byte pushedCount[VALUES]; /* ghost: times each value was linked by a push */
byte poppedCount[VALUES]; /* ghost: times each value was returned by a pop */
byte finished = 0;

/* The INIT nodes (at most 6), linked before the workers start: values 10, 11, ... */
init {
    byte k = 0;
    atomic {
        do
        :: k == INIT -> break
        :: else ->
            inUse[k] = true;
            val[k] = 10 + k;
            pushedCount[10 + k] = 1;
            next[k] = head;
            head = k;
            k++
        od;
        run worker(0, OPS0, MASK0);
        run worker(1, OPS1, MASK1);
#if N == 3
        run worker(2, OPS2, MASK2);
#endif
        run checker()
    }
}

proctype worker(byte me, ops, mask) {
    byte op = 0, node, top, g, nx, v, k, pushes = 0;
    bool done;
    do
    :: op == ops -> break
    :: else ->
        if
        :: (mask >> op) & 1 ->
            /* push(value): a value unique per (thread, push); at most 3 pushes per thread */
            v = me * 3 + pushes + 1;
            pushes++;
            atomic {
                /* the pool: any free node (one exists: NODES covers every push). Each free
                 * node may be taken or passed over; when all are passed over, the first. */
                node = NIL;
                k = 0;
                do
                :: k == NODES -> break
                :: else ->
                    if
                    :: !inUse[k] -> node = k; break
                    :: true -> skip
                    fi;
                    k++
                od;
                if
                :: node == NIL ->
                    node = 0;
                    do
                    :: inUse[node] -> node++
                    :: else -> break
                    od
                :: else -> skip
                fi;
                assert(node < NODES && !inUse[node]);
                inUse[node] = true
            };
            val[node] = v;
            g = generation;
            top = head;
            next[node] = top;
            done = false;
            do
            :: done -> break
            :: else ->
#ifndef MUTANT_STALE_NEXT
                next[node] = top;
#endif
                atomic {
                    if
                    :: head == top && generation == g -> head = node; pushedCount[v]++; done = true
                    :: else -> top = head; g = generation
                    fi
                }
            od
        :: else ->
            /* pop */
            if
            :: head == NIL -> goto nextOp /* the peek */
            :: else -> skip
            fi;
            g = generation;
            top = head;
            done = false;
            do
            :: done -> break
            :: top == NIL -> goto nextOp
            :: else ->
                nx = next[top]; /* maybe stale: the CAS validates */
                atomic {
                    if
#ifdef MUTANT_NO_GENERATION
                    :: head == top && generation == g -> head = nx; done = true
#else
                    :: head == top && generation == g -> head = nx; generation++; done = true
#endif
                    :: else -> top = head; g = generation
                    fi
                }
            od;
            atomic {
                assert(inUse[top]); /* a linked node is never free */
                v = val[top];
                poppedCount[v]++;
                assert(v >= 1 && v < VALUES && pushedCount[v] == 1 && poppedCount[v] == 1);
                inUse[top] = false /* recycled at once */
            }
        fi;
nextOp:
        op++
    od;
    finished++
}

/* After every worker: the list from head is exactly the values pushed and not popped. */
proctype checker() {
    byte node, steps = 0, v;
    byte seen[VALUES];
    finished == N;
    node = head;
    do
    :: node == NIL -> break
    :: else ->
        assert(steps < NODES); /* acyclic */
        assert(inUse[node]);
        v = val[node];
        seen[v]++;
        node = next[node];
        steps++
    od;
    v = 1;
    do
    :: v == VALUES -> break
    :: else ->
        assert(pushedCount[v] <= 1);
        assert(seen[v] + poppedCount[v] == pushedCount[v]);
        v++
    od
}
