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
	var b strings.Builder
	b.WriteString("| flag | default | |\n| --- | --- | --- |\n")
	for _, sec := range flagSections(fs) {
		fmt.Fprintf(&b, "| **%s** | | |\n", sec.title)
		for _, f := range sec.flags {
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
