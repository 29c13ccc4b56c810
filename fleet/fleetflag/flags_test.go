package fleetflag

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
)

// TestCheck: the follower's rules read the binders' marks: a flag of the
// load is refused beside --agents, a marked one taken, the follower's own
// refused without --agents, a comparison's judging needs
// --agents-compare and a search does not go with it.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" passes
	}{
		{[]string{"--agents", "a:1", "--agents-token-file", "t", "--json", "x.json"}, ""},
		{[]string{"--agents", "a:1", "--agents-token-file", "t", "-c", "4"}, "--agents: --concurrency is the load's"},
		{[]string{"--agents-poll", "1s"}, "--agents-poll needs --agents"},
		{[]string{"--json", "x.json", "-c", "4"}, ""},
		{[]string{"--agents", "a:1", "--agents-token-file", "t", "--regression", "ttft_p99<+10%"}, "give --agents-compare"},
		{[]string{"--agents", "a:1", "--agents-token-file", "t", "--agents-compare", "--find-max", "ttft_p99<=1s"}, "does not work with a comparison"},
		{[]string{"--agents", "a:1", "--agents-token-file", "t", "--agents-compare", "--regression", "ttft_p99<+10%"}, ""},
		{[]string{"--agents", "a:1"}, "needs --agents-token-file"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f := Add(fs)
		fs.IntP("concurrency", "c", 8, "")
		fs.String("json", "", "")
		fs.StringArray("regression", nil, "")
		fs.StringArray("find-max", nil, "")
		flaghelp.Follower(fs, "json")
		flaghelp.Roles(fs, []string{flaghelp.Taken, flaghelp.Judging}, "regression")
		flaghelp.Roles(fs, []string{flaghelp.Taken, flaghelp.Searching}, "find-max")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := f.Check(fs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
