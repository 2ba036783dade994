package session_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/session"
)

// The README's session-store snippet (internal/readmetest checks it): a
// gorilla/sessions Store whose data lives in Zaris, shared by every
// instance of the application.
func ExampleNew() {
	ctx := context.Background()
	c, err := sdk.Connect(ctx, "zaris://inproc/sessions") // or the cluster
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	signingKey := []byte("32-or-more-bytes-of-secret-key!!") // signs the cookie (gorilla/securecookie)
	store, err := session.New(c, session.Options{IdleTimeout: 30 * time.Minute}, signingKey)
	if err != nil {
		log.Fatal(err)
	}

	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := store.Get(r, store.Name()) // the gorilla/sessions API
		n, _ := s.Values["visits"].(int)
		s.Values["visits"] = n + 1
		if err := s.Save(r, w); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "visits: %d", n+1)
	})
	srv := httptest.NewServer(app)
	defer srv.Close()

	jar, _ := cookiejar.New(nil) // a browser: keeps the session cookie
	browser := &http.Client{Jar: jar}
	for range 2 {
		resp, err := browser.Get(srv.URL)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(string(body))
	}
	// Output:
	// visits: 1
	// visits: 2
}
