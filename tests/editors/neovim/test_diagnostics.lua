-- Diagnostics from the real server arrive for tests/corpus/bad files, with the MK code the file
-- name promises on the line the corpus marks.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

H.run("diagnostics", function()
  H.setup()
  for _, case in ipairs({
    { file = "tests/corpus/bad/mk007_vmem_4096_f32.py", code = "MK007" },
    { file = "tests/corpus/bad/mk003_index_map_arity.py", code = "MK003" },
  }) do
    local path = H.repo .. "/" .. case.file
    -- The corpus marks the expected line with a comment naming the code.
    local want_line
    for i, line in ipairs(vim.fn.readfile(path)) do
      if line:find("expect: " .. case.code, 1, true) then
        want_line = i - 1
      end
    end
    H.check(want_line, "%s has no '# expect: %s' marker", case.file, case.code)
    local bufnr = H.open(path)
    local diags = H.wait(15000, function()
      local found = vim.tbl_filter(function(d)
        return d.code == case.code
      end, vim.diagnostic.get(bufnr))
      return #found > 0 and found
    end, case.code .. " diagnostics in " .. case.file)
    H.check(diags[1].source == "maxkernel", "source: %s", vim.inspect(diags[1].source))
    H.check(H.find(diags, function(d) return d.lnum == want_line end),
      "%s: no %s on line %d, got lines %s", case.file, case.code, want_line + 1,
      vim.inspect(vim.tbl_map(function(d) return d.lnum + 1 end, diags)))
  end
end)
