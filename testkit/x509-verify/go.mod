module herald/testkit/x509-verify

go 1.26
