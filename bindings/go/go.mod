module github.com/herald-rs/herald/bindings/go

go 1.21
