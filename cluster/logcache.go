package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// logCache keeps the most recent Raft log entries in memory, as
// raft.LogCache does, so the leader replicates fresh entries without
// reading them back from BoltDB. raft.LogCache bounds the number of
// entries only; an import's entries are a MiB each, and 512 of them would
// hold half a GiB. Entries larger than maxEntryBytes are therefore not
// cached (reading one back from BoltDB costs little beside its size).
type logCache struct {
	store         raft.LogStore
	maxEntryBytes int

	mu    sync.RWMutex
	cache []*raft.Log // by index modulo its length

	// replay, when set, bounds the entries read ahead of the state
	// machine while the log found at start is replayed.
	replay *replayAhead
}

func newLogCache(entries, maxEntryBytes int, store raft.LogStore) *logCache {
	return &logCache{store: store, maxEntryBytes: maxEntryBytes, cache: make([]*raft.Log, entries)}
}

func (c *logCache) GetLog(idx uint64, log *raft.Log) error {
	c.mu.RLock()
	cached := c.cache[idx%uint64(len(c.cache))]
	c.mu.RUnlock()
	if cached != nil && cached.Index == idx {
		*log = *cached
		return nil
	}
	if c.replay == nil {
		return c.store.GetLog(idx, log)
	}
	c.replay.wait(idx)
	if err := c.store.GetLog(idx, log); err != nil {
		return err
	}
	c.replay.read(idx, int64(len(log.Data)), log.Type == raft.LogCommand)
	return nil
}

func (c *logCache) StoreLog(log *raft.Log) error {
	return c.StoreLogs([]*raft.Log{log})
}

// StoreLogs caches entries only once the store has them.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.store.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	for _, l := range logs {
		slot := l.Index % uint64(len(c.cache))
		if len(l.Data) <= c.maxEntryBytes {
			c.cache[slot] = l
		} else if old := c.cache[slot]; old != nil && old.Index == l.Index {
			c.cache[slot] = nil // never answer with an overwritten entry
		}
	}
	c.mu.Unlock()
	return nil
}

func (c *logCache) FirstIndex() (uint64, error) { return c.store.FirstIndex() }
func (c *logCache) LastIndex() (uint64, error)  { return c.store.LastIndex() }

// DeleteRange empties the cache: Raft deletes entries to compact the log
// or to drop a follower's conflicting tail, which new entries replace.
func (c *logCache) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	clear(c.cache)
	c.mu.Unlock()
	return c.store.DeleteRange(min, max)
}
