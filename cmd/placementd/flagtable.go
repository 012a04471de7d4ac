package main

import (
	"flag"
	"fmt"
	"strings"
)

// flagTable is `placementd serve --help` as the Markdown table of
// docs/operators-guide.md: the flags by group (flagGroups), each with its
// default and description. The guide's copy is generated from it
// (TestGuideFlagTable fails when they drift; -update-guide rewrites it).
func flagTable(fs *flag.FlagSet) string {
	groups := make([][]*flag.Flag, len(flagGroups)+1)
	fs.VisitAll(func(f *flag.Flag) {
		g := flagGroup(f.Name)
		groups[g] = append(groups[g], f)
	})
	var b strings.Builder
	b.WriteString("| flag | default | |\n| --- | --- | --- |\n")
	for i, flags := range groups {
		if len(flags) == 0 {
			continue
		}
		title := "Other"
		if i < len(flagGroups) {
			title = flagGroups[i].title
		}
		fmt.Fprintf(&b, "| **%s** | | |\n", title)
		for _, f := range flags {
			kind, usage := flag.UnquoteUsage(f)
			name := "`--" + f.Name + "`"
			if kind != "" {
				name += " " + kind
			}
			def := f.DefValue
			if def != "" {
				def = "`" + def + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", name, def, strings.ReplaceAll(usage, "|", `\|`))
		}
	}
	return b.String()
}
