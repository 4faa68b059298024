package agentdef

import (
	"fmt"
	"slices"
	"strings"
)

// Severity says how much a Diagnostic matters.
type Severity string

// Severities. An error means the file was rejected; a warning means it
// loaded with something left out, changed or recovered; info is for the
// record.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// A Diagnostic is one finding about one file. Line and Column are 1-based
// and zero when the finding is about the file as a whole.
type Diagnostic struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Column   int      `json:"column"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// String formats the diagnostic as "file:line:col: severity: message", the
// form editors and compilers use; without a line it is
// "file: severity: message".
func (d Diagnostic) String() string {
	if d.Line > 0 {
		col := d.Column
		if col < 1 {
			col = 1
		}
		return fmt.Sprintf("%s:%d:%d: %s: %s", d.File, d.Line, col, d.Severity, d.Message)
	}
	return fmt.Sprintf("%s: %s: %s", d.File, d.Severity, d.Message)
}

// HasErrors reports whether any diagnostic is an error.
func HasErrors(diags []Diagnostic) bool {
	return slices.ContainsFunc(diags, func(d Diagnostic) bool { return d.Severity == SeverityError })
}

// SortDiagnostics orders diagnostics by file, line and column, keeping the
// order of findings at the same place.
func SortDiagnostics(diags []Diagnostic) {
	slices.SortStableFunc(diags, func(a, b Diagnostic) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
}
