package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// connString builds the SDK connection string for get/set/del: the --addr
// list, or the client addresses of the members /v1/cluster lists; the
// store from --store, or the cluster's.
func connString(ctx context.Context, g *globals) (string, error) {
	addrs, store := seeds(g.addr), g.store
	if len(addrs) == 0 || store == "" {
		d, _, err := newAPI(g).discover(ctx, g)
		if err != nil {
			return "", fmt.Errorf("discovering the client addresses (or give --addr and --store): %w", err)
		}
		if store == "" {
			store = d.Store
		}
		if len(addrs) == 0 {
			for _, n := range d.Nodes {
				if n.ClientAddr != "" && !gone(n.State) {
					addrs = append(addrs, n.ClientAddr)
				}
			}
		}
		if len(addrs) == 0 {
			return "", errors.New("the cluster lists no client address")
		}
	}
	s := "zaris://" + strings.Join(addrs, ",") + "/" + url.PathEscape(store)
	if g.token != "" {
		s += "?token=" + url.QueryEscape(g.token)
	}
	return s, nil
}

// withClient connects, runs op within --timeout and closes.
func withClient(ctx context.Context, g *globals, op func(ctx context.Context, c *sdk.Client) (sdk.Result, error)) (sdk.Result, error) {
	cs, err := connString(ctx, g)
	if err != nil {
		return sdk.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	c, err := sdk.Connect(ctx, cs, sdk.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return sdk.Result{}, fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	return op(ctx, c)
}

// resultCode maps a data-plane outcome to the exit code: 0 Success, 1
// NotFound, 2 any other status or an error.
func resultCode(key string, r sdk.Result, err error) (int, error) {
	switch {
	case err != nil && !r.OK(): // a refusal: the error carries the reason
		return exitError, fmt.Errorf("%q: %w", key, err)
	case err != nil:
		return exitError, err
	case r.OK():
		return exitOK, nil
	case r.Status == sdk.StatusNotFound:
		return exitPartial, fmt.Errorf("%q: %s", key, r.Status)
	}
	return exitError, fmt.Errorf("%q: %s: %w", key, r.Status, r.Err())
}

func cmdGet(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	pos, err := parseArgs(g, flag.NewFlagSet("get", flag.ContinueOnError), args, "KEY")
	if err != nil {
		return exitError, err
	}
	r, err := withClient(ctx, g, func(ctx context.Context, c *sdk.Client) (sdk.Result, error) {
		return c.Get(ctx, pos[0])
	})
	if code, err := resultCode(pos[0], r, err); code != exitOK {
		return code, err
	}
	if _, err := stdout.Write(append(r.Value, '\n')); err != nil {
		return exitError, err
	}
	return exitOK, nil
}

func cmdSet(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("set", flag.ContinueOnError)
	ttl := fs.Duration("ttl", 0, "time to live (0 = none)")
	pos, err := parseArgs(g, fs, args, "KEY", "VALUE")
	if err != nil {
		return exitError, err
	}
	if *ttl < 0 {
		return exitError, fmt.Errorf("%w: --ttl must be >= 0", errUsage)
	}
	r, err := withClient(ctx, g, func(ctx context.Context, c *sdk.Client) (sdk.Result, error) {
		return c.Put(ctx, pos[0], []byte(pos[1]), &sdk.PutOptions{TTL: *ttl})
	})
	if code, err := resultCode(pos[0], r, err); code != exitOK {
		return code, err
	}
	fmt.Fprintf(stdout, "%s version %d revision %d", r.Status, r.Version, r.Revision)
	if *ttl > 0 {
		fmt.Fprintf(stdout, " ttl %s", ttl.Round(time.Millisecond))
	}
	fmt.Fprintln(stdout)
	return exitOK, nil
}

func cmdDel(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	pos, err := parseArgs(g, flag.NewFlagSet("del", flag.ContinueOnError), args, "KEY")
	if err != nil {
		return exitError, err
	}
	r, err := withClient(ctx, g, func(ctx context.Context, c *sdk.Client) (sdk.Result, error) {
		return c.Delete(ctx, pos[0])
	})
	if code, err := resultCode(pos[0], r, err); code != exitOK {
		return code, err
	}
	fmt.Fprintln(stdout, r.Status)
	return exitOK, nil
}
