--[[
wattsched gate: hold every new job in the partitions wattsched manages.

Slurm calls slurm_job_submit() for each new job. Setting priority 0 holds it: Slurm never
starts it by itself. The job is marked as wattsched's with AdminComment=wattsched:gate, so
that wattsched's Slurm connector tells it from a job its user holds (sbatch -H), which stays
held; wattsched starts a marked job on the nodes it chose with
`scontrol update JobId=X NodeList=... NumNodes=k-k` then `scontrol release X`.

Enable: put this file next to slurm.conf, set `JobSubmitPlugins=lua` in slurm.conf, and run
`scontrol reconfigure`. Edit MANAGED (and DEFAULT_PARTITION, the partition of jobs that name
none) to match the partitions listed in wattsched's connector config.
--]]

local MANAGED = { batch = true }
local DEFAULT_PARTITION = "batch"
local MARKER = "wattsched:gate"

local function managed(partitions)
   -- A job may name several partitions ("a,b"): gate it if any of them is managed.
   for p in string.gmatch(partitions, "[^,]+") do
      if MANAGED[p] then
         return true
      end
   end
   return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local partitions = job_desc.partition or DEFAULT_PARTITION
   -- priority 0 already: the user submitted it held (sbatch -H); leave it the user's.
   if managed(partitions) and job_desc.priority ~= 0 then
      job_desc.priority = 0
      job_desc.admin_comment = MARKER
      slurm.log_info("wattsched: holding new job %s in %s", tostring(job_desc.name), partitions)
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   return slurm.SUCCESS
end

slurm.log_info("wattsched job_submit.lua loaded")
return slurm.SUCCESS
