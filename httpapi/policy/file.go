package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// fileRule is one entry of a policy file.
type fileRule struct {
	name  string
	check check
	line  int    // 0 when unknown (JSON fallback)
	path  string // the file's
}

// where is the rule's file and line, for messages.
func (fr fileRule) where() string {
	if fr.line == 0 {
		return fr.path
	}
	return fmt.Sprintf("%s line %d", fr.path, fr.line)
}

// Messages about a policy file quote its rule names only when they look
// like policy names, and never its check strings: an operator may point
// policy_file at a file that is no policy (/etc/shadow parses as YAML, its
// lines as rule names), which must not end up in the log.
var policyNameRE = regexp.MustCompile(`^[a-z0-9_.:-]{1,128}$`)

// shownName is name quoted when it looks like a policy name, or a note
// that it is not shown.
func shownName(name string) string {
	if policyNameRE.MatchString(name) {
		return strconv.Quote(name)
	}
	return "(name not shown: not a policy name)"
}

// contentRE matches what a check string's parse error quotes of it (in
// double quotes; the syntax it expects is in single quotes, or is "@" and
// "!"), and yamlContentRE what the YAML parser's errors quote.
var (
	contentRE     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	yamlContentRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'[^']*'|` + "`[^`]*`")
)

// withoutQuotes is msg with what re finds (parts of the file) left out.
func withoutQuotes(msg string, re *regexp.Regexp) string {
	return re.ReplaceAllStringFunc(msg, func(q string) string {
		if q == `"@"` || q == `"!"` {
			return q
		}
		return "(...)"
	})
}

// checkError is the reason a check string at line does not parse,
// without the check string.
func checkError(err error) string {
	var pe *ParseError
	if errors.As(err, &pe) {
		if pe.Column > 0 {
			return fmt.Sprintf("invalid check string: column %d: %s", pe.Column, withoutQuotes(pe.Msg, contentRE))
		}
		return "invalid check string: " + withoutQuotes(pe.Msg, contentRE)
	}
	return withoutQuotes(err.Error(), contentRE)
}

// loadFile reads a policy file: a YAML (or JSON, which is YAML) mapping of
// rule names to check strings. As with oslo.policy (yaml.safe_load), a later
// duplicate key wins, an empty file has no rules, a null value is the empty
// check string (allow everyone) and a list value is the old list-of-lists
// syntax.
func loadFile(path string) ([]fileRule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	rules, err := parseFileContents(data)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	for i := range rules {
		rules[i].path = path
	}
	return rules, nil
}

func parseFileContents(data []byte) ([]fileRule, error) {
	var doc yaml.Node
	yerr := yaml.Unmarshal(data, &doc)
	if yerr != nil {
		// YAML parsers refuse some valid JSON, such as the \/ escape or a
		// tab before the opening brace; accept what encoding/json accepts.
		if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
			if m, err := decodeJSON(data); err == nil {
				return jsonRules(m)
			}
		}
		return nil, fmt.Errorf("not valid YAML or JSON: %s", withoutQuotes(yerr.Error(), yamlContentRE))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil // empty file
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: expected a mapping of rule names to check strings", root.Line)
	}
	var out []fileRule
	index := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: rule name must be a string", k.Line)
		}
		name := k.Value
		c, err := yamlCheck(v)
		if err != nil {
			return nil, fmt.Errorf("line %d: rule %s: %s", v.Line, shownName(name), checkError(err))
		}
		fr := fileRule{name: name, check: c, line: k.Line}
		if j, dup := index[name]; dup {
			out[j] = fr
		} else {
			index[name] = len(out)
			out = append(out, fr)
		}
	}
	return out, nil
}

func yamlCheck(v *yaml.Node) (check, error) {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.ScalarNode:
		switch v.ShortTag() {
		case "!!str":
			return parseRule(v.Value)
		case "!!null":
			return trueCheck{}, nil
		}
		return nil, fmt.Errorf("check string must be a string, not %s (quote it)", v.ShortTag())
	case yaml.SequenceNode:
		var list [][]string
		for _, item := range v.Content {
			switch item.Kind {
			case yaml.ScalarNode:
				if item.ShortTag() != "!!str" {
					return nil, fmt.Errorf("list rule element must be a string, not %s", item.ShortTag())
				}
				list = append(list, []string{item.Value})
			case yaml.SequenceNode:
				var inner []string
				for _, s := range item.Content {
					if s.Kind != yaml.ScalarNode || s.ShortTag() != "!!str" {
						return nil, fmt.Errorf("line %d: list rule element must be a string", s.Line)
					}
					inner = append(inner, s.Value)
				}
				list = append(list, inner)
			default:
				return nil, fmt.Errorf("line %d: list rule element must be a string or a list of strings", item.Line)
			}
		}
		return parseListRule(list)
	}
	return nil, fmt.Errorf("check string must be a string")
}

func decodeJSON(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return m, nil
}

func jsonRules(m map[string]any) ([]fileRule, error) {
	var out []fileRule
	for name, v := range m {
		c, err := jsonCheck(v)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %s", shownName(name), checkError(err))
		}
		out = append(out, fileRule{name: name, check: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func jsonCheck(v any) (check, error) {
	switch v := v.(type) {
	case string:
		return parseRule(v)
	case nil:
		return trueCheck{}, nil
	case []any:
		var list [][]string
		for _, item := range v {
			switch item := item.(type) {
			case string:
				list = append(list, []string{item})
			case []any:
				var inner []string
				for _, s := range item {
					str, ok := s.(string)
					if !ok {
						return nil, fmt.Errorf("list rule element must be a string")
					}
					inner = append(inner, str)
				}
				list = append(list, inner)
			default:
				return nil, fmt.Errorf("list rule element must be a string or a list of strings")
			}
		}
		return parseListRule(list)
	}
	return nil, fmt.Errorf("check string must be a string, not %T", v)
}
