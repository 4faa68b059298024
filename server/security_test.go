package server

import (
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

// TestToken checks that with a token every API and stream request needs
// it in the Authorization header, never in a cookie, and the page itself
// does not.
func TestToken(t *testing.T) {
	const tok = "s3cret-token"
	f := newFixture(t, fixtureOptions{token: tok})
	for _, c := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"no token", nil, 401},
		{"wrong token", []string{"Authorization", "Bearer nope"}, 401},
		{"not bearer", []string{"Authorization", "Basic " + tok}, 401},
		{"cookie", []string{"Cookie", oldCookie + "=" + tok}, 401},
		{"bearer", []string{"Authorization", "Bearer " + tok}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			if st := f.do("GET", "/api/runs", nil, nil, c.hdr...); st != c.want {
				t.Errorf("GET /api/runs: %d, want %d", st, c.want)
			}
			if st := f.do("POST", "/api/runs/x/cancel", nil, nil, c.hdr...); c.want == 401 && st != 401 {
				t.Errorf("POST cancel: %d, want 401", st)
			}
			if st := f.do("GET", "/api/runs/x/events", nil, nil, c.hdr...); c.want == 401 && st != 401 {
				t.Errorf("GET events: %d, want 401", st)
			}
		})
	}
	// The page and the API's description are open; the data is not.
	for _, p := range []string{"/", "/ui/app.js", "/api/openapi.json"} {
		if st := f.do("GET", p, nil, nil); st != 200 {
			t.Errorf("GET %s without the token: %d, want 200", p, st)
		}
	}

	// An old link with ?token= gets the page, which takes the token, and
	// no cookie; a cookie an earlier version set is expired.
	req, _ := http.NewRequest("GET", f.srv.URL+"/runs/abc?token="+tok, nil)
	req.AddCookie(&http.Cookie{Name: oldCookie, Value: tok})
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("/runs/abc?token=: %d, want the page", res.StatusCode)
	}
	cookies := res.Cookies()
	if len(cookies) != 1 || cookies[0].Name != oldCookie || cookies[0].Value != "" || cookies[0].MaxAge >= 0 {
		t.Errorf("the page set the cookies %v, want only %s expired", cookies, oldCookie)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err = c.Get(f.srv.URL + "/?token=" + tok)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(res.Cookies()) != 0 {
		t.Errorf("/?token= set the cookies %v, want none", res.Cookies())
	}
}

// TestOrigin checks that writes from another site's page are refused and
// those of the server's own page or of programs are not.
func TestOrigin(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	host := strings.TrimPrefix(f.srv.URL, "http://")
	body := RunRequest{Task: "Write the report."}
	for _, c := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"no origin", nil, 201},
		{"same origin", []string{"Origin", "http://" + host, "Sec-Fetch-Site", "same-origin"}, 201},
		{"other origin", []string{"Origin", "http://evil.example"}, 403},
		{"other port", []string{"Origin", "http://127.0.0.1:1"}, 403},
		{"null origin", []string{"Origin", "null"}, 403},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			if st := f.do("POST", "/api/runs", body, nil, c.hdr...); st != c.want {
				t.Errorf("POST /api/runs: %d, want %d", st, c.want)
			}
		})
	}
	// Another site's page may not read the API either (it could not see
	// the answer, but could hold event streams open): its GETs are refused;
	// the server's own page's, a program's and a typed address's are not.
	run := f.start(RunRequest{Task: "Write the report."})
	for _, c := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"no origin", nil, 200},
		{"same origin", []string{"Sec-Fetch-Site", "same-origin"}, 200},
		{"typed address", []string{"Sec-Fetch-Site", "none"}, 200},
		{"other origin", []string{"Origin", "http://evil.example"}, 403},
		{"cross-site", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"same-site", []string{"Sec-Fetch-Site", "same-site"}, 403},
	} {
		t.Run("GET/"+c.name, func(t *testing.T) {
			for _, path := range []string{"/api/runs", "/api/runs/" + run} {
				if st := f.do("GET", path, nil, nil, c.hdr...); st != c.want {
					t.Errorf("GET %s: %d, want %d", path, st, c.want)
				}
			}
		})
	}
	// The event stream of a run is refused before it opens.
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/runs/"+run+"/events", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("a cross-site event stream: %d, want 403", res.StatusCode)
	}
}

// TestHost checks the Host header against DNS rebinding.
func TestHost(t *testing.T) {
	f := newFixture(t, fixtureOptions{hosts: []string{"devbox.lan"}})
	for _, c := range []struct {
		host string
		want int
	}{
		{"localhost:7788", 200},
		{"127.0.0.1:7788", 200},
		{"[::1]:7788", 200},
		{"10.1.2.3", 200},
		{"app.localhost:7788", 200},
		{"devbox.lan:7788", 200},
		{"DEVBOX.lan", 200},
		{"evil.example:7788", 421},
		{"localhost.evil.example", 421},
		{"127.0.0.1.nip.io", 421},
	} {
		t.Run(c.host, func(t *testing.T) {
			if st := f.do("GET", "/api/runs", nil, nil, "Host", c.host); st != c.want {
				t.Errorf("Host %s: %d, want %d", c.host, st, c.want)
			}
			if c.want != 200 {
				if st := f.do("GET", "/", nil, nil, "Host", c.host); st != c.want {
					t.Errorf("the page with Host %s: %d, want %d", c.host, st, c.want)
				}
			}
		})
	}
}
