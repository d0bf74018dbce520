--[[
wattsched gate: hold every new job in the partitions wattsched manages.

Slurm calls slurm_job_submit() for each new job. Setting priority 0 holds it: Slurm never
starts it by itself. The job is marked as wattsched's with AdminComment=wattsched:gate (a
field only operators can change), so that wattsched's Slurm connector tells it from a job its
user holds (sbatch -H), which stays held; wattsched starts a marked job on the nodes it chose
with `scontrol update JobId=X NodeList=... NumNodes=k-k` then `scontrol release X`.

Slurm records a hold set at submission as the user's (Reason=JobHeldUser), which the job's
owner could lift with `scontrol release`. slurm_job_modify() closes that: every job update
(`scontrol release` is an update that sets the priority) passes through it, and for a marked
job it refuses, for anyone but the OPERATORS, any priority change other than a hold, and any
move to a partition wattsched does not manage. So only an operator (root, SlurmUser, or a uid
listed below: the one wattsched runs as) can start a gated job.

An operator keeps one job back with `scontrol hold X` (Reason=JobHeldAdmin: wattsched leaves
it alone and shows it held by an operator), and gives it back to wattsched with
`scontrol uhold X` (Reason=JobHeldUser again, still marked).

Enable: put this file next to slurm.conf, set `JobSubmitPlugins=lua` in slurm.conf, and run
`scontrol reconfigure`. Edit MANAGED (and DEFAULT_PARTITION, the partition of jobs that name
none) to match the partitions listed in wattsched's connector config, and OPERATORS to hold
the uid of SlurmUser and of the account wattsched runs as, if not root.
--]]

local MANAGED = { batch = true }
local DEFAULT_PARTITION = "batch"
local MARKER = "wattsched:gate"
-- uids that may lift the gate: root, and (edit) SlurmUser and wattsched's account.
local OPERATORS = { [0] = true }
-- Slurm's "not set" for a 32-bit field of an update (NO_VAL).
local NO_VAL = 4294967294

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
   if OPERATORS[modify_uid] or job_rec.admin_comment ~= MARKER then
      return slurm.SUCCESS
   end
   local prio = job_desc.priority
   if prio ~= nil and prio ~= NO_VAL and prio ~= 0 then
      slurm.log_info("wattsched: refused uid %s lifting the gate of job %s",
                     tostring(modify_uid), tostring(job_rec.job_id))
      return slurm.ESLURM_ACCESS_DENIED or slurm.ERROR
   end
   if job_desc.partition ~= nil and not managed(job_desc.partition) then
      slurm.log_info("wattsched: refused uid %s moving job %s to partition %s",
                     tostring(modify_uid), tostring(job_rec.job_id), job_desc.partition)
      return slurm.ESLURM_ACCESS_DENIED or slurm.ERROR
   end
   return slurm.SUCCESS
end

slurm.log_info("wattsched job_submit.lua loaded")
return slurm.SUCCESS
