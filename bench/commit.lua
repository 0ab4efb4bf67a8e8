-- wrk script for bench/documents.sh: every request is one single-document Firestore commit
-- (POST …/documents:commit) that creates a new document, so no two requests touch the same one.
--   wrk -s bench/commit.lua http://127.0.0.1:PORT/v1/projects/P/databases/%28default%29/documents:commit -- P COLLECTION PAYLOAD_BYTES

local thread_count = 0

function setup(thread)
   thread_count = thread_count + 1
   thread:set("tid", thread_count)
end

function init(args)
   local project = args[1] or "bench"
   local collection = args[2] or "commits"
   local payload_bytes = tonumber(args[3] or "200")
   -- os.time() keeps the warm-up run's ids apart from the measured run's (a separate wrk process)
   prefix = string.format("projects/%s/databases/(default)/documents/%s/r%d-t%d-", project, collection,
                          os.time(), tid or 0)
   payload = string.rep("x", payload_bytes)
   headers = { ["Content-Type"] = "application/json" }
   counter = 0
end

function request()
   counter = counter + 1
   local body = '{"writes":[{"update":{"name":"' .. prefix .. string.format("%010d", counter) ..
      '","fields":{"n":{"integerValue":"' .. counter .. '"},"payload":{"stringValue":"' .. payload .. '"}}}}]}'
   return wrk.format("POST", nil, headers, body)
end
