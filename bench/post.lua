-- wrk script: POST one AdmissionReview body on every request, over wrk's keep-alive connections.
-- Usage: wrk ... -s bench/post.lua URL -- BODY_FILE
function init(args)
  local file = assert(io.open(args[1], "rb"))
  wrk.body = file:read("*a")
  file:close()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end
