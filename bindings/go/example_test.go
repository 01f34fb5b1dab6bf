package herald_test

import (
	"context"
	"fmt"

	herald "github.com/herald-rs/herald/bindings/go"
)

func Example() {
	engine, writer, _ := herald.NewEngine()
	defer engine.Close()
	defer writer.Close()
	writer.Replace(nil, 1) // an empty list at version 1: the engine is ready

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, err := engine.Watch(ctx, herald.WatchRequest{
		ResourceVersion: herald.At(1),
		LabelSelector:   "app=web",
	})
	if err != nil {
		panic(err) // errors.Is(err, herald.ErrInvalid) for a bad selector
	}
	defer watch.Close()

	writer.Apply(herald.Added, 2, herald.Object{Namespace: "default", Name: "web-1",
		Labels: map[string]string{"app": "web"}, Payload: []byte(`{"kind":"Pod"}`)})
	writer.Apply(herald.Added, 3, herald.Object{Namespace: "default", Name: "db-1",
		Labels: map[string]string{"app": "db"}})

	ev := <-watch.Events(ctx)
	fmt.Println(ev.Type, ev.Key, ev.ResourceVersion, string(ev.Payload))
	// Output: ADDED default/web-1 2 {"kind":"Pod"}
}
