package fsm

import (
	"maps"
	"slices"

	"github.com/placementd/placementd/fsm/state"
)

// commands is every command a log entry can hold, by the kind its entry
// names ("k"): the one table of them. The kinds are persisted (every log
// holds them) and never change; each is its command's Kind(), which Encode
// writes (TestCommandTable checks both). A new command is added here and
// given a golden entry (testdata/golden), or no build reads it back.
var commands = map[string]func() state.Command{
	"provider.create":         func() state.Command { return &state.CreateProvider{} },
	"provider.update":         func() state.Command { return &state.UpdateProvider{} },
	"provider.delete":         func() state.Command { return &state.DeleteProvider{} },
	"provider.set_traits":     func() state.Command { return &state.SetProviderTraits{} },
	"provider.delete_traits":  func() state.Command { return &state.DeleteProviderTraits{} },
	"provider.set_aggregates": func() state.Command { return &state.SetAggregates{} },
	"inventory.create":        func() state.Command { return &state.CreateInventory{} },
	"inventory.update":        func() state.Command { return &state.UpdateInventory{} },
	"inventory.set":           func() state.Command { return &state.SetInventories{} },
	"inventory.delete":        func() state.Command { return &state.DeleteInventory{} },
	"inventory.delete_all":    func() state.Command { return &state.DeleteInventories{} },
	"resource_class.create":   func() state.Command { return &state.CreateResourceClass{} },
	"resource_class.rename":   func() state.Command { return &state.RenameResourceClass{} },
	"resource_class.delete":   func() state.Command { return &state.DeleteResourceClass{} },
	"trait.create":            func() state.Command { return &state.CreateTrait{} },
	"trait.delete":            func() state.Command { return &state.DeleteTrait{} },
	"allocations.set":         func() state.Command { return &state.SetAllocations{} },
	"allocations.delete":      func() state.Command { return &state.DeleteConsumerAllocations{} },
	"reshape":                 func() state.Command { return &state.Reshape{} },
	"import.chunk":            func() state.Command { return &state.ImportChunk{} },
}

// NewCommand returns an empty command of the given kind, or nil if no
// command has that kind.
func NewCommand(kind string) state.Command {
	if newCmd := commands[kind]; newCmd != nil {
		return newCmd()
	}
	return nil
}

// CommandKinds lists every command kind, sorted.
func CommandKinds() []string { return slices.Sorted(maps.Keys(commands)) }
