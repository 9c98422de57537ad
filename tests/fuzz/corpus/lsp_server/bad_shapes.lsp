Content-Length: 9

{not jsonContent-Length: 5

[1,2]Content-Length: 44

{"jsonrpc": "2.0", "id": [1], "method": "x"}Content-Length: 40

{"jsonrpc": "2.0", "id": 9, "method": 5}Content-Length: 56

{"jsonrpc": "2.0", "id": 10, "method": "x", "params": 3}Content-Length: 28

{"jsonrpc": "2.0", "id": 11}Content-Length: 83

{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}Content-Length: 52

{"jsonrpc": "2.0", "id": 12, "method": "initialize"}