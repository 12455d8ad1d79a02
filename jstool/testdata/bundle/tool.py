print("not a tool")
